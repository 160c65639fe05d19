//===- Batcher.cpp - Batching across requests -------------------*- C++ -*-===//

#include "tools/serve/Batcher.h"

#include <algorithm>

using namespace tfm_serve;

bool tfm_serve::sameSearch(const tfm_search_options &a,
                           const tfm_search_options &b) {
  return a.beam_size == b.beam_size && a.n_best == b.n_best &&
         a.max_length == b.max_length &&
         a.max_length_ratio == b.max_length_ratio &&
         a.min_length == b.min_length && a.length_penalty == b.length_penalty &&
         a.suppress_eos == b.suppress_eos &&
         a.repetition_penalty == b.repetition_penalty &&
         a.no_repeat_ngram_size == b.no_repeat_ngram_size &&
         a.use_vmap == b.use_vmap && a.sampling == b.sampling &&
         a.sampling_topk == b.sampling_topk &&
         a.sampling_topp == b.sampling_topp &&
         a.sampling_temperature == b.sampling_temperature && a.seed == b.seed;
}

//===----------------------------------------------------------------------===//
// Job
//===----------------------------------------------------------------------===//

Job::Job(const tfm_search_options &search, std::vector<Sentence> sentences)
    : options(search), sentences(std::move(sentences)),
      hypotheses(this->sentences.size()), remaining(this->sentences.size()) {
  if (remaining == 0)
    state = State::Done;
}

Job::State Job::wait(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex);
  done.wait_until(lock, deadline, [&] { return state != State::Pending; });
  return state;
}

void Job::finish(size_t index, Hypotheses result) {
  std::lock_guard<std::mutex> lock(mutex);
  if (state != State::Pending)
    return;
  hypotheses[index] = std::move(result);
  if (--remaining == 0) {
    state = State::Done;
    done.notify_all();
  }
}

void Job::fail(const std::string &message) {
  std::lock_guard<std::mutex> lock(mutex);
  if (state != State::Pending)
    return;
  state = State::Failed;
  failure = message;
  done.notify_all();
}

void Job::cancel() {
  std::lock_guard<std::mutex> lock(mutex);
  if (state == State::Pending)
    state = State::Cancelled;
}

//===----------------------------------------------------------------------===//
// ModelQueue
//===----------------------------------------------------------------------===//

bool ModelQueue::push(const std::shared_ptr<Job> &job) {
  if (queuedSentences + job->size() > limits.maxQueued)
    return false;
  jobs.push_back(job);
  queuedSentences += job->size();
  return true;
}

void ModelQueue::remove(const std::shared_ptr<Job> &job) {
  auto it = std::find(jobs.begin(), jobs.end(), job);
  if (it == jobs.end())
    return;
  queuedSentences -= job->size() - job->nextToQueue;
  jobs.erase(it);
}

bool ModelQueue::ready(Clock::time_point now, Clock::time_point &wakeAt) const {
  if (queuedSentences == 0)
    return false;
  // Right after a batch: wait a little for as many sentences as it had
  // beside those it left waiting. Even when a full batch waits already,
  // the choice among them and the answered clients' next sentences makes
  // batches of closer lengths (takeClosest), which finish together.
  size_t awaited = std::min(lastBatch + leftWaiting, limits.maxQueued);
  if (windowEnd && now < *windowEnd && queuedSentences < awaited) {
    wakeAt = std::min(wakeAt, *windowEnd);
    return false;
  }
  return true;
}

/// Tokens a sentence takes in a padded batch.
static size_t paddedLength(const Sentence &sentence) {
  return sentence.source.size() + sentence.prefix.size();
}

bool ModelQueue::fits(const Batch &batch, size_t longest,
                      const Sentence &next) const {
  // The runtime pads every sentence to the longest one.
  size_t padded =
      (batch.items.size() + 1) * std::max(longest, paddedLength(next));
  return batch.items.empty() || padded <= limits.maxTokens;
}

/// One sentence from each waiting job of the batch's options, in order, as
/// long as the budgets allow (and the batch holds fewer than `most`);
/// returns how many were taken.
size_t ModelQueue::takeRound(Batch &batch, size_t &longest, size_t most) {
  size_t taken = 0;
  for (const std::shared_ptr<Job> &job : jobs) {
    if (batch.items.size() >= most)
      break;
    if (job->nextToQueue == job->size() ||
        !sameSearch(job->options, batch.search))
      continue;
    const Sentence &next = job->sentences[job->nextToQueue];
    if (!fits(batch, longest, next))
      continue;
    longest = std::max(longest, paddedLength(next));
    batch.items.emplace_back(job, job->nextToQueue++);
    ++taken;
  }
  return taken;
}

/// When more jobs wait than a batch holds: the oldest job's next sentence,
/// then the next sentences of the others closest to its length (older
/// first among equals), one a job. A batch of similar lengths is less
/// padding, as the translator's length-sorted batches are; the oldest is
/// always taken and the jobs passed over move to the front, so none waits
/// for long. False (nothing taken) when every waiting job fits.
bool ModelQueue::takeClosest(Batch &batch, size_t &longest) {
  std::vector<std::shared_ptr<Job>> candidates;
  for (const std::shared_ptr<Job> &job : jobs)
    if (job->nextToQueue < job->size() &&
        sameSearch(job->options, batch.search))
      candidates.push_back(job);
  if (candidates.size() <= limits.maxSentences)
    return false;
  auto nextLength = [](const std::shared_ptr<Job> &job) {
    return paddedLength(job->sentences[job->nextToQueue]);
  };
  size_t anchor = nextLength(candidates.front());
  auto distance = [&](const std::shared_ptr<Job> &job) {
    size_t length = nextLength(job);
    return length > anchor ? length - anchor : anchor - length;
  };
  std::stable_sort(
      candidates.begin() + 1, candidates.end(),
      [&](const auto &a, const auto &b) { return distance(a) < distance(b); });
  for (const std::shared_ptr<Job> &job : candidates) {
    if (batch.items.size() >= limits.maxSentences)
      break;
    const Sentence &next = job->sentences[job->nextToQueue];
    if (!fits(batch, longest, next))
      continue;
    longest = std::max(longest, paddedLength(next));
    batch.items.emplace_back(job, job->nextToQueue++);
  }
  return true;
}

ModelQueue::Batch ModelQueue::take() {
  Batch batch;
  if (jobs.empty())
    return batch;
  batch.search = jobs.front()->options;
  std::vector<size_t> before;
  for (const std::shared_ptr<Job> &job : jobs)
    before.push_back(job->nextToQueue);
  size_t longest = 0;
  if (!takeClosest(batch, longest))
    while (takeRound(batch, longest, limits.maxSentences) > 0) {
    }
  taken(batch, before);
  std::stable_sort(batch.items.begin(), batch.items.end(),
                   [](const auto &a, const auto &b) {
                     return a.first->sentences[a.second].source.size() <
                            b.first->sentences[b.second].source.size();
                   });
  return batch;
}

ModelQueue::Batch ModelQueue::takeJoiners(const tfm_search_options &search,
                                          size_t room) {
  Batch batch;
  batch.search = search;
  std::vector<size_t> before;
  for (const std::shared_ptr<Job> &job : jobs)
    before.push_back(job->nextToQueue);
  size_t longest = 0;
  while (takeRound(batch, longest, room) > 0) {
  }
  taken(batch, before);
  return batch;
}

void ModelQueue::taken(const Batch &batch, const std::vector<size_t> &before) {
  queuedSentences -= batch.items.size();
  leftWaiting = queuedSentences;
  // Jobs that gave sentences and have more go behind those that gave none.
  std::deque<std::shared_ptr<Job>> waiting, served;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i]->nextToQueue == jobs[i]->size())
      continue;
    (jobs[i]->nextToQueue == before[i] ? waiting : served).push_back(jobs[i]);
  }
  waiting.insert(waiting.end(), served.begin(), served.end());
  jobs.swap(waiting);
}

bool ModelQueue::othersWait(const tfm_search_options &search) const {
  for (const std::shared_ptr<Job> &job : jobs)
    if (job->nextToQueue < job->size() && !sameSearch(job->options, search))
      return true;
  return false;
}

void ModelQueue::ran(size_t size, Clock::time_point now) {
  lastBatch = size;
  windowEnd = now + limits.wait;
}

//===----------------------------------------------------------------------===//
// Executor
//===----------------------------------------------------------------------===//

Executor::Executor(std::function<void()> onStart,
                   std::function<void(const BatchReport &)> onBatch)
    : onStart(std::move(onStart)), onBatch(std::move(onBatch)) {}

Executor::~Executor() { stop(); }

size_t Executor::addModel(BatchLimits limits, BatchRunner runner,
                          StreamOpener opener) {
  queues.push_back(std::make_unique<ModelQueue>(limits, std::move(runner)));
  running.emplace_back();
  running.back().opener = std::move(opener);
  return queues.size() - 1;
}

void Executor::start() {
  thread = std::thread([this] { run(); });
}

void Executor::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  if (thread.joinable())
    thread.join();
}

bool Executor::submit(size_t model, const std::shared_ptr<Job> &job) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!queues[model]->push(job))
      return false;
  }
  wake.notify_all();
  return true;
}

void Executor::cancel(size_t model, const std::shared_ptr<Job> &job) {
  job->cancel();
  std::lock_guard<std::mutex> lock(mutex);
  queues[model]->remove(job);
}

size_t Executor::queued(size_t model) const {
  std::lock_guard<std::mutex> lock(mutex);
  return queues[model]->queued();
}

/// The next model with a batch or a step to run, round-robin; while
/// stopping, any model with queued sentences (no more are coming).
std::optional<size_t> Executor::pickReady(Clock::time_point &wakeAt) {
  Clock::time_point now = Clock::now();
  for (size_t k = 0; k < queues.size(); ++k) {
    size_t model = (nextModel + k) % queues.size();
    const ModelQueue &queue = *queues[model];
    bool streaming = !running[model].members.empty();
    bool idleReady =
        running[model].opener ? queue.queued() > 0 : queue.ready(now, wakeAt);
    if (streaming || (stopping ? queue.queued() > 0 : idleReady)) {
      nextModel = model + 1;
      return model;
    }
  }
  return std::nullopt;
}

void Executor::run() {
  if (onStart)
    onStart();
  std::unique_lock<std::mutex> lock(mutex);
  while (true) {
    Clock::time_point wakeAt = Clock::time_point::max();
    if (std::optional<size_t> model = pickReady(wakeAt)) {
      if (running[*model].opener) {
        StepWork work = takeStepWork(*model);
        lock.unlock();
        runStep(*model, std::move(work));
        lock.lock();
        continue;
      }
      ModelQueue::Batch batch = queues[*model]->take();
      size_t size = batch.items.size();
      lock.unlock();
      runBatch(*model, std::move(batch));
      lock.lock();
      queues[*model]->ran(size, Clock::now());
      continue;
    }
    if (stopping)
      break;
    if (wakeAt == Clock::time_point::max())
      wake.wait(lock);
    else
      wake.wait_until(lock, wakeAt);
  }
}

void Executor::runBatch(size_t model, ModelQueue::Batch batch) {
  std::vector<const Sentence *> sentences;
  BatchReport report;
  report.model = model;
  for (const auto &[job, index] : batch.items) {
    sentences.push_back(&job->sentences[index]);
    report.sourceTokens += job->sentences[index].source.size();
  }
  report.sentences = report.decoded = sentences.size();
  std::vector<Hypotheses> out(sentences.size());
  Clock::time_point start = Clock::now();
  std::string error;
  try {
    queues[model]->run()(batch.search, sentences, out);
  } catch (const std::exception &e) {
    error = e.what();
  } catch (...) {
    error = "unknown error";
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report.failed = !error.empty();
  for (const Hypotheses &hypotheses : out)
    if (!report.failed && !hypotheses.tokens.empty())
      report.targetTokens += hypotheses.tokens[0].size();
  // Counted before any answer leaves: a client that reads /metrics after
  // its answer finds its sentence in them.
  if (onBatch)
    onBatch(report);
  for (size_t i = 0; i < batch.items.size(); ++i) {
    const auto &[job, index] = batch.items[i];
    if (report.failed)
      failJob(model, job, error);
    else
      job->finish(index, std::move(out[i]));
  }
}

/// A failed job: its error, and what is still queued of it dropped.
void Executor::failJob(size_t model, const std::shared_ptr<Job> &job,
                       const std::string &error) {
  job->fail(error);
  std::lock_guard<std::mutex> lock(mutex);
  queues[model]->remove(job);
}

//===----------------------------------------------------------------------===//
// Streams
//===----------------------------------------------------------------------===//

/// Under the lock: an idle model opens a stream for the oldest job's search
/// and fills it as take() fills a batch; a running one takes joiners of
/// its search into its free slots, unless sentences of another search
/// wait (then it runs down first).
Executor::StepWork Executor::takeStepWork(size_t model) {
  Running &r = running[model];
  ModelQueue &queue = *queues[model];
  StepWork work;
  size_t slots = queue.batchLimits().maxSentences;
  if (r.members.empty()) {
    if (queue.queued() == 0)
      return work;
    work.open = !r.stream || !sameSearch(r.search, queue.nextSearch());
    work.joiners = queue.take();
    return work;
  }
  if (!queue.othersWait(r.search) && r.members.size() < slots)
    work.joiners = queue.takeJoiners(r.search, slots - r.members.size());
  return work;
}

/// One step of the model's stream, the joiners added first; a search that
/// cannot stream runs as one batch.
void Executor::runStep(size_t model, StepWork work) {
  Running &r = running[model];
  BatchReport report;
  report.model = model;
  Clock::time_point start = Clock::now();
  std::vector<const Sentence *> joining;
  std::vector<std::pair<Running::Member, Hypotheses>> finished;
  std::vector<std::shared_ptr<Job>> failing;
  std::string error;
  if (work.open)
    r.added = 0;
  // Numbered as the stream numbers them: on from those added before.
  for (const auto &[job, index] : work.joiners.items) {
    joining.push_back(&job->sentences[index]);
    report.sourceTokens += job->sentences[index].source.size();
    r.members.emplace(r.added++, std::make_pair(job, index));
  }
  try {
    if (work.open) {
      r.stream.reset();
      r.stream = r.opener(work.joiners.search,
                          queues[model]->batchLimits().maxSentences);
      r.search = work.joiners.search;
      if (!r.stream) {
        r.members.clear();
        return runBatch(model, std::move(work.joiners));
      }
    }
    if (!joining.empty())
      r.stream->add(joining);
    report.decoded = r.members.size();
    for (auto &[number, hypotheses] : r.stream->step()) {
      auto member = r.members.find(number);
      if (!hypotheses.tokens.empty())
        report.targetTokens += hypotheses.tokens[0].size();
      finished.emplace_back(member->second, std::move(hypotheses));
      r.members.erase(member);
    }
    report.sentences = finished.size();
  } catch (const std::exception &e) {
    failing = failStream(model, report);
    error = e.what();
  } catch (...) {
    failing = failStream(model, report);
    error = "unknown error";
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  // As in runBatch: counted before the answers leave.
  if (onBatch)
    onBatch(report);
  for (auto &[member, hypotheses] : finished)
    member.first->finish(member.second, std::move(hypotheses));
  for (const std::shared_ptr<Job> &job : failing)
    failJob(model, job, error);
}

/// The stream's error drops the stream; its members' jobs are returned to
/// be failed.
std::vector<std::shared_ptr<Job>> Executor::failStream(size_t model,
                                                       BatchReport &report) {
  Running &r = running[model];
  report.failed = true;
  report.decoded = r.members.size();
  std::vector<std::shared_ptr<Job>> jobs;
  for (const auto &[number, member] : r.members)
    jobs.push_back(member.first);
  r.members.clear();
  r.stream.reset();
  return jobs;
}
