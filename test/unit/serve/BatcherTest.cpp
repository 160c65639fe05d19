//===- BatcherTest.cpp - tfm-serve's batching policy ------------*- C++ -*-===//
//
// The queue of one model (which sentences form a batch, when it is ready)
// and the executor (results in order, failures, cancelled jobs, draining at
// stop), with a fake model that "translates" a sentence into its source.
//
//===----------------------------------------------------------------------===//

#include "tools/serve/Batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <stdexcept>

using namespace tfm_serve;
using namespace std::chrono_literals;

namespace {

tfm_search_options greedy() {
  tfm_search_options o{};
  o.beam_size = o.n_best = 1;
  o.max_length = 16;
  return o;
}

/// A job of sentences whose sources have these lengths (ids: the length).
std::shared_ptr<Job> jobOf(std::vector<size_t> lengths,
                           tfm_search_options search = greedy()) {
  std::vector<Sentence> sentences;
  for (size_t length : lengths)
    sentences.push_back({std::vector<int32_t>(length, int32_t(length)), {}});
  return std::make_shared<Job>(search, std::move(sentences));
}

void echo(const tfm_search_options &, const std::vector<const Sentence *> &in,
          std::vector<Hypotheses> &out) {
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = {{in[i]->source}, {0.0f}, {{}}};
}

BatchLimits limits(size_t sentences, size_t tokens = 1000,
                   size_t queued = 100) {
  BatchLimits l;
  l.maxSentences = sentences;
  l.maxTokens = tokens;
  l.maxQueued = queued;
  l.wait = 5ms;
  return l;
}

} // namespace

TEST(ServeBatcher, ShortRequestsInterleaveWithALongOne) {
  ModelQueue queue(limits(4), echo);
  auto longJob = jobOf(std::vector<size_t>(10, 3));
  ASSERT_TRUE(queue.push(longJob));
  std::vector<std::shared_ptr<Job>> shorts = {jobOf({2}), jobOf({2}),
                                              jobOf({2})};
  for (auto &job : shorts)
    ASSERT_TRUE(queue.push(job));
  ModelQueue::Batch batch = queue.take();
  ASSERT_EQ(batch.items.size(), 4u);
  size_t fromLong = 0;
  for (auto &item : batch.items)
    fromLong += item.first == longJob;
  EXPECT_EQ(fromLong, 1u); // the three short ones are all in the first batch
  EXPECT_EQ(queue.queued(), 9u);
}

// More waiting requests than a batch holds: the oldest and those closest
// to its length, so that a batch pads little; the others stay first in
// line and form the next batch.
TEST(ServeBatcher, CrowdedQueuesBatchSimilarLengths) {
  ModelQueue queue(limits(4), echo);
  std::map<const Job *, size_t> lengthOf;
  for (size_t length : {5, 40, 41, 6, 39, 5, 42, 7}) {
    std::shared_ptr<Job> job = jobOf({length});
    lengthOf[job.get()] = length;
    ASSERT_TRUE(queue.push(job));
  }
  auto lengths = [&](const ModelQueue::Batch &batch) {
    std::vector<size_t> out;
    for (auto &item : batch.items)
      out.push_back(lengthOf[item.first.get()]);
    return out;
  };
  EXPECT_EQ(lengths(queue.take()), (std::vector<size_t>{5, 5, 6, 7}));
  EXPECT_EQ(lengths(queue.take()), (std::vector<size_t>{39, 40, 41, 42}));
  EXPECT_EQ(queue.queued(), 0u);
}

// A request of unusual length is passed over at most until it is the
// oldest waiting.
TEST(ServeBatcher, AnUnusualLengthWaitsOnlyUntilItIsOldest) {
  ModelQueue queue(limits(2), echo);
  auto odd = jobOf({50});
  ASSERT_TRUE(queue.push(jobOf({5})));
  ASSERT_TRUE(queue.push(odd));
  ASSERT_TRUE(queue.push(jobOf({5})));
  ModelQueue::Batch first = queue.take();
  ASSERT_EQ(first.items.size(), 2u);
  EXPECT_NE(first.items[0].first, odd);
  EXPECT_NE(first.items[1].first, odd);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(queue.push(jobOf({5})));
  ModelQueue::Batch second = queue.take();
  ASSERT_EQ(second.items.size(), 2u);
  EXPECT_TRUE(second.items[0].first == odd || second.items[1].first == odd);
}

TEST(ServeBatcher, BatchesAreSortedByLengthAndKeepTheTokenBudget) {
  ModelQueue queue(limits(8, /*tokens=*/10), echo);
  ASSERT_TRUE(queue.push(jobOf({4, 1, 3})));
  ModelQueue::Batch batch = queue.take();
  // 3 sentences padded to 4 tokens would be 12 > 10: two of them.
  ASSERT_EQ(batch.items.size(), 2u);
  EXPECT_EQ(batch.items[0].second, 1u); // length 1 first
  EXPECT_EQ(batch.items[1].second, 0u);
  EXPECT_EQ(queue.take().items.size(), 1u);
}

TEST(ServeBatcher, OnlySentencesOfTheSameOptionsShareABatch) {
  ModelQueue queue(limits(8), echo);
  tfm_search_options beam = greedy();
  beam.beam_size = 4;
  ASSERT_TRUE(queue.push(jobOf({2, 2})));
  ASSERT_TRUE(queue.push(jobOf({2}, beam)));
  EXPECT_EQ(queue.take().items.size(), 2u);
  ModelQueue::Batch second = queue.take();
  ASSERT_EQ(second.items.size(), 1u);
  EXPECT_EQ(second.search.beam_size, 4);
}

TEST(ServeBatcher, AFullQueueRefusesARequest) {
  ModelQueue queue(limits(8, 1000, /*queued=*/3), echo);
  EXPECT_TRUE(queue.push(jobOf({2, 2})));
  EXPECT_FALSE(queue.push(jobOf({2, 2})));
  EXPECT_TRUE(queue.push(jobOf({2})));
}

TEST(ServeBatcher, AnIdleModelRunsAtOnceAndABusyOneWaitsBriefly) {
  ModelQueue queue(limits(4), echo);
  Clock::time_point now = Clock::now(), wakeAt = Clock::time_point::max();
  ASSERT_TRUE(queue.push(jobOf({2})));
  EXPECT_TRUE(queue.ready(now, wakeAt)); // idle: at once
  queue.take();
  queue.ran(3, now); // a batch of 3 just ended
  ASSERT_TRUE(queue.push(jobOf({2})));
  EXPECT_FALSE(queue.ready(now + 1ms, wakeAt)); // waits for more
  EXPECT_EQ(wakeAt, now + 5ms);
  EXPECT_TRUE(queue.ready(now + 5ms, wakeAt)); // the window closed
  ASSERT_TRUE(queue.push(jobOf({2, 2})));
  EXPECT_TRUE(queue.ready(now + 1ms, wakeAt)); // as many as the last batch
}

// A batch of 2 left 2 waiting: a full batch waits, yet the queue gives the
// 2 answered clients the window to send again, so that 4 are chosen from.
TEST(ServeBatcher, ACrowdedQueueWaitsForTheAnsweredClients) {
  ModelQueue queue(limits(2), echo);
  Clock::time_point now = Clock::now(), wakeAt = Clock::time_point::max();
  for (size_t length : {3, 9, 8, 4})
    ASSERT_TRUE(queue.push(jobOf({length})));
  queue.take();
  queue.ran(2, now);
  EXPECT_EQ(queue.queued(), 2u);
  EXPECT_FALSE(queue.ready(now + 1ms, wakeAt)); // a full batch, no choice
  EXPECT_EQ(wakeAt, now + 5ms);
  ASSERT_TRUE(queue.push(jobOf({2})));
  EXPECT_FALSE(queue.ready(now + 1ms, wakeAt));
  ASSERT_TRUE(queue.push(jobOf({7})));
  EXPECT_TRUE(queue.ready(now + 1ms, wakeAt)); // both clients came back
}

TEST(ServeBatcher, TheExecutorAnswersEachJobInOrder) {
  Executor executor(nullptr, nullptr);
  size_t model = executor.addModel(limits(3), echo);
  executor.start();
  std::vector<std::shared_ptr<Job>> jobs;
  for (size_t i = 1; i <= 5; ++i) {
    jobs.push_back(jobOf({i, i + 1, i + 2}));
    ASSERT_TRUE(executor.submit(model, jobs.back()));
  }
  for (size_t i = 1; i <= 5; ++i) {
    auto &job = jobs[i - 1];
    ASSERT_EQ(job->wait(Clock::now() + 10s), Job::State::Done);
    for (size_t k = 0; k < 3; ++k)
      EXPECT_EQ(job->results()[k].tokens[0].size(), i + k);
  }
  executor.stop();
}

TEST(ServeBatcher, AFailedBatchFailsItsJobsAndServingGoesOn) {
  std::atomic<int> calls{0};
  BatchRunner flaky = [&](const tfm_search_options &s,
                          const std::vector<const Sentence *> &in,
                          std::vector<Hypotheses> &out) {
    if (calls++ == 0)
      throw std::runtime_error("the logits are not finite");
    echo(s, in, out);
  };
  std::vector<BatchReport> reports;
  Executor executor(nullptr,
                    [&](const BatchReport &r) { reports.push_back(r); });
  size_t model = executor.addModel(limits(1), flaky);
  auto first = jobOf({2, 2}), second = jobOf({3});
  ASSERT_TRUE(executor.submit(model, first));
  ASSERT_TRUE(executor.submit(model, second));
  executor.start();
  EXPECT_EQ(first->wait(Clock::now() + 10s), Job::State::Failed);
  EXPECT_EQ(first->error(), "the logits are not finite");
  EXPECT_EQ(second->wait(Clock::now() + 10s), Job::State::Done);
  executor.stop();
  EXPECT_EQ(executor.queued(model), 0u); // the failed job's rest dropped
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_TRUE(reports[0].failed);
}

TEST(ServeBatcher, ACancelledJobLeavesTheQueueAndStopDrainsTheRest) {
  Executor executor(nullptr, nullptr);
  size_t model = executor.addModel(limits(2), echo);
  auto cancelled = jobOf({2, 2, 2}), kept = jobOf({2, 2, 2});
  ASSERT_TRUE(executor.submit(model, cancelled));
  ASSERT_TRUE(executor.submit(model, kept));
  executor.cancel(model, cancelled);
  EXPECT_EQ(executor.queued(model), 3u);
  executor.start();
  executor.stop(); // answers what was queued before it returns
  EXPECT_EQ(kept->wait(Clock::now()), Job::State::Done);
  EXPECT_EQ(cancelled->wait(Clock::now()), Job::State::Cancelled);
}

//===----------------------------------------------------------------------===//
// Continuous batching
//===----------------------------------------------------------------------===//

namespace {

/// A fake stream: a sentence of source length n finishes n steps after it
/// joined, its hypothesis its source; the log says at which of the
/// stream's steps each source length joined and left.
struct EchoStream : SentenceStream {
  struct Entry {
    int64_t number;
    const Sentence *sentence;
    int64_t left; // steps to go
  };
  std::vector<Entry> live;
  int64_t added = 0, steps = 0;
  std::vector<std::string> &log;
  bool failAtStep2;

  EchoStream(std::vector<std::string> &log, bool failAtStep2)
      : log(log), failAtStep2(failAtStep2) {}

  void add(const std::vector<const Sentence *> &sentences) override {
    for (const Sentence *s : sentences) {
      live.push_back({added++, s, int64_t(s->source.size())});
      log.push_back("join " + std::to_string(s->source.size()) + " at " +
                    std::to_string(steps));
    }
  }

  std::vector<std::pair<int64_t, Hypotheses>> step() override {
    if (failAtStep2 && steps == 2)
      throw std::runtime_error("the logits are not finite");
    ++steps;
    std::vector<std::pair<int64_t, Hypotheses>> done;
    std::vector<Entry> staying;
    for (Entry &e : live)
      if (--e.left == 0) {
        done.push_back({e.number, {{e.sentence->source}, {0.0f}, {{}}}});
        log.push_back("done " + std::to_string(e.sentence->source.size()) +
                      " at " + std::to_string(steps));
      } else {
        staying.push_back(e);
      }
    live = staying;
    return done;
  }
};

/// An executor whose model streams through EchoStreams of `slots`.
struct StreamingModel {
  std::vector<std::string> log;
  std::vector<BatchReport> reports;
  bool failAtStep2 = false;
  size_t opened = 0;
  Executor executor{nullptr,
                    [this](const BatchReport &r) { reports.push_back(r); }};
  size_t model;

  explicit StreamingModel(size_t slots) {
    model = executor.addModel(
        limits(slots), echo, [this](const tfm_search_options &, size_t) {
          ++opened;
          return std::make_unique<EchoStream>(log, failAtStep2);
        });
  }
};

} // namespace

// Three sentences, two slots: the oldest (5) and the one closest to its
// length (2) start; when the 2 ends, the third takes its slot at the next
// step and finishes while the long one runs on; each job is answered
// with its own sentence.
TEST(ServeBatcher, ASentenceJoinsTheRunningBatchWhenASlotFrees) {
  StreamingModel m(2);
  auto longJob = jobOf({5}), shortJob = jobOf({2}), third = jobOf({1});
  for (auto &job : {longJob, shortJob, third})
    ASSERT_TRUE(m.executor.submit(m.model, job));
  m.executor.start();
  for (auto &job : {longJob, shortJob, third})
    ASSERT_EQ(job->wait(Clock::now() + 10s), Job::State::Done);
  m.executor.stop();
  EXPECT_EQ(third->results()[0].tokens[0], std::vector<int32_t>(1, 1));
  EXPECT_EQ(longJob->results()[0].tokens[0], std::vector<int32_t>(5, 5));
  std::vector<std::string> expected = {"join 2 at 0", "join 5 at 0",
                                       "done 2 at 2", "join 1 at 2",
                                       "done 1 at 3", "done 5 at 5"};
  EXPECT_EQ(m.log, expected);
  EXPECT_EQ(m.opened, 1u);
  // A report a step: the sentences decoded together, those finished.
  ASSERT_EQ(m.reports.size(), 5u);
  EXPECT_EQ(m.reports[0].decoded, 2u);
  EXPECT_EQ(m.reports[0].sentences, 0u);
  EXPECT_EQ(m.reports[1].sentences, 1u);
  EXPECT_EQ(m.reports[2].decoded, 2u);
}

// Sentences of another search do not join: the stream runs down, then a
// stream for theirs opens.
TEST(ServeBatcher, AnotherSearchWaitsForTheStreamToRunDown) {
  StreamingModel m(4);
  tfm_search_options beam = greedy();
  beam.beam_size = 4;
  auto first = jobOf({3}), other = jobOf({1}, beam), same = jobOf({1});
  for (auto &job : {first, other, same})
    ASSERT_TRUE(m.executor.submit(m.model, job));
  m.executor.start();
  for (auto &job : {first, other, same})
    ASSERT_EQ(job->wait(Clock::now() + 10s), Job::State::Done);
  m.executor.stop();
  // The first batch takes both greedy sentences; the beam one waits.
  std::vector<std::string> expected = {"join 1 at 0", "join 3 at 0",
                                       "done 1 at 1", "done 3 at 3",
                                       "join 1 at 0", "done 1 at 1"};
  EXPECT_EQ(m.log, expected);
  EXPECT_EQ(m.opened, 2u);
}

TEST(ServeBatcher, AFailedStepFailsTheStreamsJobsAndServingGoesOn) {
  StreamingModel m(2);
  m.failAtStep2 = true;
  auto a = jobOf({4}), b = jobOf({5});
  ASSERT_TRUE(m.executor.submit(m.model, a));
  ASSERT_TRUE(m.executor.submit(m.model, b));
  m.executor.start();
  EXPECT_EQ(a->wait(Clock::now() + 10s), Job::State::Failed);
  EXPECT_EQ(b->wait(Clock::now() + 10s), Job::State::Failed);
  EXPECT_EQ(a->error(), "the logits are not finite");
  m.failAtStep2 = false;
  auto after = jobOf({2});
  ASSERT_TRUE(m.executor.submit(m.model, after));
  EXPECT_EQ(after->wait(Clock::now() + 10s), Job::State::Done);
  m.executor.stop();
  EXPECT_EQ(m.opened, 2u); // the failed stream was dropped
}

// A search the model cannot stream (its shortlist) runs as a batch.
TEST(ServeBatcher, ASearchThatCannotStreamRunsAsABatch) {
  std::atomic<int> batches{0};
  BatchRunner counted = [&](const tfm_search_options &s,
                            const std::vector<const Sentence *> &in,
                            std::vector<Hypotheses> &out) {
    ++batches;
    echo(s, in, out);
  };
  Executor executor(nullptr, nullptr);
  size_t model = executor.addModel(
      limits(4), counted,
      [](const tfm_search_options &, size_t) { return nullptr; });
  auto job = jobOf({2, 3});
  ASSERT_TRUE(executor.submit(model, job));
  executor.start();
  ASSERT_EQ(job->wait(Clock::now() + 10s), Job::State::Done);
  executor.stop();
  EXPECT_EQ(batches.load(), 1);
  EXPECT_EQ(job->results()[1].tokens[0].size(), 3u);
}

// A client that reads /metrics after its answer finds its sentence counted:
// a batch (or a step) is reported before its answers leave, streamed or not.
TEST(ServeBatcher, SentencesAreReportedBeforeTheirAnswersLeave) {
  for (bool streams : {false, true}) {
    std::shared_ptr<Job> job = jobOf({2, 3});
    std::vector<Job::State> seen;
    Executor executor(nullptr, [&](const BatchReport &r) {
      if (r.sentences > 0)
        seen.push_back(job->wait(Clock::now()));
    });
    StreamOpener opener;
    std::vector<std::string> log;
    if (streams)
      opener = [&](const tfm_search_options &, size_t) {
        return std::make_unique<EchoStream>(log, false);
      };
    size_t model = executor.addModel(limits(4), echo, opener);
    ASSERT_TRUE(executor.submit(model, job));
    executor.start();
    ASSERT_EQ(job->wait(Clock::now() + 10s), Job::State::Done);
    executor.stop();
    // Streamed: the 2 finishes a step before the 3, the job after both.
    ASSERT_EQ(seen.size(), streams ? 2u : 1u);
    for (Job::State state : seen)
      EXPECT_EQ(state, Job::State::Pending);
  }
}
