//===- Batcher.h - Dynamic batching across concurrent requests --*- C++ -*-===//
//
// Sentences of every request for one model wait in that model's queue; one
// executor thread forms batches from the queues and runs them, one batch at
// a time across all models (a single OpenMP root thread: the cores are never
// shared by two batches, and no idle OpenMP team spins beside a busy one).
// tfm-serve runs it on the main thread, which loaded the models (their
// weight check is an OpenMP loop): a second root thread's first parallel
// regions stalled for seconds on a crowded host.
//
// A batch takes sentences round-robin over the requests that wait (so a long
// request does not hold back short ones: their sentences interleave), up to
// a sentence budget and a padded-token budget, all with the same search
// options, then sorted by length. A queue is ready at once when its model
// was idle; right after one of its batches ran it waits up to `wait` for as
// many sentences as that batch had (the clients just answered tend to send
// again) beside those the batch left waiting. No HTTP here: requests are
// Jobs.
//
// A model that streams (continuous batching) runs a step at a time
// instead: before each step of its running batch, waiting sentences of
// the same search join it up to the sentence budget, and each sentence
// is answered at the step it finishes. Sentences of another search wait
// until the running ones are done (the stream takes no more meanwhile).
// Steps of several models take turns.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_SERVE_BATCHER_H
#define TFM_TOOLS_SERVE_BATCHER_H

#include "tfm/runtime.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tfm_serve {

using Clock = std::chrono::steady_clock;

/// One sentence to translate: source ids ending in EOS, and the target
/// tokens forced first (a language token, a prefix; may be empty).
struct Sentence {
  std::vector<int32_t> source, prefix;
  /// Its index in its request: sampling's seed with the request's seed
  /// (tfm_batch.indexes), so that batching does not change its samples.
  int64_t index = 0;
};

/// A sentence's n best hypotheses (token ids without EOS), best first.
struct Hypotheses {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<float> scores;
  /// Each hypothesis's tokens' log-probabilities (EOS's last, if it ended
  /// with one).
  std::vector<std::vector<float>> tokenScores;
};

/// Search options compare equal when a batch may mix their sentences.
bool sameSearch(const tfm_search_options &a, const tfm_search_options &b);

/// One request's sentences, all translated with the same options.
class Job {
public:
  enum class State { Pending, Done, Failed, Cancelled };

  Job(const tfm_search_options &search, std::vector<Sentence> sentences);

  /// Waits until every sentence is done, the job failed, or `deadline`
  /// (then Pending is returned and the caller should cancel the job).
  State wait(Clock::time_point deadline);
  /// Hypotheses per sentence, in order (once Done).
  const std::vector<Hypotheses> &results() const { return hypotheses; }
  /// Why the job failed (once Failed).
  const std::string &error() const { return failure; }
  const tfm_search_options &search() const { return options; }
  size_t size() const { return sentences.size(); }

private:
  friend class ModelQueue;
  friend class Executor;
  void finish(size_t index, Hypotheses result);
  void fail(const std::string &message);
  void cancel();

  tfm_search_options options;
  std::vector<Sentence> sentences;
  std::vector<Hypotheses> hypotheses;
  size_t nextToQueue = 0; // guarded by the executor's lock
  size_t remaining;
  State state = State::Pending;
  std::string failure;
  mutable std::mutex mutex;
  std::condition_variable done;
};

struct BatchLimits {
  size_t maxSentences = 32;
  /// Sentences x longest source in the batch (what the padded batch holds).
  size_t maxTokens = 8192;
  /// Sentences waiting in the queue; a request that would pass it is
  /// refused (503).
  size_t maxQueued = 1024;
  Clock::duration wait = std::chrono::milliseconds(5);
  /// Sentences join a running batch between its steps (where the model
  /// can stream); else batches run to their end.
  bool continuous = true;
};

/// Translates one batch of a model: out[i] for sentences[i]; throws
/// std::exception on failure.
using BatchRunner =
    std::function<void(const tfm_search_options &search,
                       const std::vector<const Sentence *> &sentences,
                       std::vector<Hypotheses> &out)>;

/// A model's running batch that sentences join between its steps (the
/// runtime's stream, tfm_stream): continuous batching.
class SentenceStream {
public:
  virtual ~SentenceStream() = default;
  /// The sentences join at the next step, numbered on from those added
  /// before; throws std::exception.
  virtual void add(const std::vector<const Sentence *> &sentences) = 0;
  /// One step: the sentences it finished, by number, with their
  /// hypotheses; throws std::exception.
  virtual std::vector<std::pair<int64_t, Hypotheses>> step() = 0;
};

/// Opens a model's stream of at most `slots` sentences searched with
/// `search`; null when such a search runs in batches instead (a
/// shortlist is chosen per batch).
using StreamOpener = std::function<std::unique_ptr<SentenceStream>(
    const tfm_search_options &search, size_t slots)>;

/// What one batch (or one step of a stream) did, for metrics: the
/// sentences it finished, the source tokens it encoded and the target
/// tokens it answered; `decoded`, the sentences decoded together.
struct BatchReport {
  size_t model = 0, sentences = 0, sourceTokens = 0, targetTokens = 0;
  size_t decoded = 0;
  double seconds = 0;
  bool failed = false;
};

/// One model's queue and its batching policy; no threads and no locks of
/// its own (the Executor's lock guards it), so it can be tested alone.
class ModelQueue {
public:
  ModelQueue(BatchLimits limits, BatchRunner runner)
      : limits(limits), runner(std::move(runner)) {}

  /// Queues the job's sentences, or refuses them when the queue would pass
  /// its limit.
  bool push(const std::shared_ptr<Job> &job);
  /// Drops a job's sentences that were not taken yet.
  void remove(const std::shared_ptr<Job> &job);
  /// Whether a batch should run now; else `wakeAt` says when to look again
  /// (unchanged when only a new request can make it ready).
  bool ready(Clock::time_point now, Clock::time_point &wakeAt) const;

  /// The sentences of one batch, each with its job and index there.
  struct Batch {
    tfm_search_options search;
    std::vector<std::pair<std::shared_ptr<Job>, size_t>> items;
  };
  Batch take();
  /// At most `room` sentences searched with `search` to join a running
  /// stream, round-robin over the jobs as take() takes them.
  Batch takeJoiners(const tfm_search_options &search, size_t room);
  /// Whether sentences of another search than `search` wait: a stream
  /// then takes no more, so that they are next.
  bool othersWait(const tfm_search_options &search) const;
  /// The search of the oldest waiting job (queued() > 0).
  const tfm_search_options &nextSearch() const { return jobs.front()->options; }
  /// After a batch of `size` sentences ran: opens the waiting window.
  void ran(size_t size, Clock::time_point now);

  size_t queued() const { return queuedSentences; }
  const BatchRunner &run() const { return runner; }
  const BatchLimits &batchLimits() const { return limits; }

private:
  bool fits(const Batch &batch, size_t longest, const Sentence &next) const;
  size_t takeRound(Batch &batch, size_t &longest, size_t most);
  bool takeClosest(Batch &batch, size_t &longest);
  /// After sentences were taken (each job's next before them in
  /// `before`): the counts, and the jobs that gave sentences behind those
  /// that gave none.
  void taken(const Batch &batch, const std::vector<size_t> &before);

  BatchLimits limits;
  BatchRunner runner;
  /// Jobs with sentences not yet taken, in round-robin order.
  std::deque<std::shared_ptr<Job>> jobs;
  size_t queuedSentences = 0;
  size_t lastBatch = 0;
  /// Sentences still queued when the last batch was taken.
  size_t leftWaiting = 0;
  std::optional<Clock::time_point> windowEnd;
};

/// Runs every model's batches on one thread, one at a time: the caller's
/// (run) or its own (start).
class Executor {
public:
  /// `onStart` runs first on the executor thread (the runtime's thread
  /// count is that thread's); `onBatch` after every batch.
  Executor(std::function<void()> onStart,
           std::function<void(const BatchReport &)> onBatch);
  ~Executor();

  /// Adds a model before run() or start(); returns its index. With
  /// `opener`, its sentences join a running stream between steps
  /// (continuous batching) where the opener gives one.
  size_t addModel(BatchLimits limits, BatchRunner runner,
                  StreamOpener opener = {});
  /// Runs batches on the calling thread until stop().
  void run();
  /// Runs batches on a thread of its own.
  void start();
  /// Finishes every queued sentence, then ends run() (and joins the thread
  /// of start()). Any thread may call it.
  void stop();

  /// Queues a job for a model; false when its queue is full.
  bool submit(size_t model, const std::shared_ptr<Job> &job);
  /// Drops what is still queued of a job (its deadline passed).
  void cancel(size_t model, const std::shared_ptr<Job> &job);
  size_t queued(size_t model) const;

private:
  /// A model's stream and its sentences in it, by number: the executor
  /// thread's alone.
  struct Running {
    StreamOpener opener;
    std::unique_ptr<SentenceStream> stream;
    tfm_search_options search{};
    using Member = std::pair<std::shared_ptr<Job>, size_t>;
    std::map<int64_t, Member> members;
    int64_t added = 0;
  };
  /// What one step of a model's stream takes from its queue.
  struct StepWork {
    bool open = false; // a stream for the batch's search, first
    ModelQueue::Batch joiners;
  };

  std::optional<size_t> pickReady(Clock::time_point &wakeAt);
  void runBatch(size_t model, ModelQueue::Batch batch);
  void failJob(size_t model, const std::shared_ptr<Job> &job,
               const std::string &error);
  StepWork takeStepWork(size_t model);
  void runStep(size_t model, StepWork work);
  std::vector<std::shared_ptr<Job>> failStream(size_t model,
                                               BatchReport &report);

  std::function<void()> onStart;
  std::function<void(const BatchReport &)> onBatch;
  std::vector<std::unique_ptr<ModelQueue>> queues;
  std::vector<Running> running;
  size_t nextModel = 0;
  bool stopping = false;
  mutable std::mutex mutex;
  std::condition_variable wake;
  std::thread thread;
};

} // namespace tfm_serve

#endif // TFM_TOOLS_SERVE_BATCHER_H
