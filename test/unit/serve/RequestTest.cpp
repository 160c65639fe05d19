//===- RequestTest.cpp - tfm-serve's request parsing ------------*- C++ -*-===//

#include "tools/serve/Request.h"

#include <gtest/gtest.h>

#include <random>

using namespace tfm_serve;

namespace {

const char *kJson = "application/json";

HttpError errorOf(const std::string &body,
                  const std::string &type = "application/json") {
  Parsed<TranslateRequest> parsed = parseTranslateRequest(body, type);
  const HttpError *error = tfm_serve::errorOf(parsed);
  return error ? *error : HttpError{200, ""};
}

} // namespace

TEST(ServeRequest, LibreTranslateFieldsFromJsonAndForms) {
  auto json = parseTranslateRequest(
      R"({"q": ["a", "b"], "source": "en", "target": "de", "alternatives": 2,
          "api_key": "k"})",
      "application/json; charset=utf-8");
  ASSERT_TRUE(std::holds_alternative<TranslateRequest>(json));
  const TranslateRequest &r = std::get<TranslateRequest>(json);
  EXPECT_TRUE(r.batch);
  EXPECT_EQ(r.q, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.alternatives, 2);
  EXPECT_EQ(r.apiKey, "k");
  auto form = parseTranslateRequest("q=Open+the%20file.&source=en&target=de&"
                                    "alternatives=1",
                                    "application/x-www-form-urlencoded");
  ASSERT_TRUE(std::holds_alternative<TranslateRequest>(form));
  EXPECT_EQ(std::get<TranslateRequest>(form).q[0], "Open the file.");
  EXPECT_FALSE(std::get<TranslateRequest>(form).batch);
}

TEST(ServeRequest, ErrorsNameTheProblem) {
  EXPECT_EQ(errorOf(R"({"source": "en", "target": "de"})").message,
            "Invalid request: missing q parameter");
  EXPECT_EQ(errorOf(R"({"q": [1], "source": "en", "target": "de"})").message,
            "Invalid request: q[0] must be a string, found number");
  EXPECT_EQ(errorOf(R"({"q": "a", "source": "en"})").message,
            "Invalid request: missing target parameter");
  EXPECT_EQ(errorOf("{\"q\": \"a\"").status, 400);
  EXPECT_EQ(errorOf("{}", "text/plain").status, 415);
  EXPECT_EQ(
      errorOf("q=%FF&source=en&target=de", "application/x-www-form-urlencoded")
          .message,
      "Invalid request: q is not valid UTF-8");
  // A form's count is digits with an optional sign, not a prefix of them
  // (ServeRequestFuzzer's crash-alternatives-not-integer).
  for (const char *count : {"1-2", "-", "--1", "1e2"})
    EXPECT_EQ(
        errorOf(std::string("q=a&source=en&target=de&alternatives=") + count,
                "application/x-www-form-urlencoded")
            .message,
        "Invalid request: alternatives parameter is not an integer")
        << count;
  std::string deep = std::string(100, '[') + std::string(100, ']');
  EXPECT_EQ(errorOf("{\"q\": " + deep + "}").message,
            "Invalid JSON: nested deeper than 16 levels");
  std::string many = "{\"q\": [" + std::string(200 * 4, ' ');
  for (int i = 0; i < 200; ++i)
    many += std::string(i ? "," : "") + "\"a\"";
  EXPECT_EQ(
      errorOf(many + "], \"source\": \"en\", \"target\": \"de\"}").message,
      "Invalid request: q has 200 items, more than the limit of 128");
}

TEST(ServeRequest, NativeOptionsAreChecked) {
  auto ok = parseNativeRequest(
      R"({"source": ["a"], "target_lang": "de", "beam_size": 4, "n_best": 2,
          "return_scores": true, "target_prefix": [["▁Die", 5]]})",
      kJson);
  ASSERT_TRUE(std::holds_alternative<NativeRequest>(ok));
  const NativeRequest &r = std::get<NativeRequest>(ok);
  EXPECT_EQ(*r.beamSize, 4);
  EXPECT_EQ(r.targetPrefix[0][1].id, 5);
  auto unknown = parseNativeRequest(
      R"({"source": ["a"], "target_lang": "de", "x": 1})", kJson);
  ASSERT_NE(tfm_serve::errorOf(unknown), nullptr);
  EXPECT_EQ(tfm_serve::errorOf(unknown)->message,
            "Invalid request: unknown field 'x'");
}

TEST(ServeRequest, NumbersAreNumbersInRange) {
  const char *pair = R"("q": "a", "source": "en", "target": "de")";
  auto withAlternatives = [&](const std::string &value) {
    return errorOf("{" + std::string(pair) + ", \"alternatives\": " + value +
                   "}")
        .message;
  };
  EXPECT_EQ(withAlternatives("-1"),
            "Invalid request: alternatives must be in [0, 8], found -1");
  EXPECT_EQ(withAlternatives("\"2\""),
            "Invalid request: alternatives must be an integer, found string");
  EXPECT_EQ(withAlternatives("true"),
            "Invalid request: alternatives must be an integer, found boolean");
  EXPECT_EQ(withAlternatives("2"), "");
  // A form's fields are all strings: its digits are its numbers.
  EXPECT_EQ(errorOf(R"(q=a&source=en&target=de&alternatives=2)",
                    "application/x-www-form-urlencoded")
                .status,
            200);
  EXPECT_EQ(errorOf(R"(q=a&source=en&target=de&alternatives=-1)",
                    "application/x-www-form-urlencoded")
                .message,
            "Invalid request: alternatives must be in [0, 8], found -1");
  for (const char *name : {"beam_size", "n_best", "max_length", "min_length",
                           "no_repeat_ngram_size", "sampling_topk", "seed"}) {
    auto parsed = parseNativeRequest(
        std::string(R"({"source": ["a"], "target_lang": "de", ")") + name +
            R"(": "2"})",
        kJson);
    ASSERT_NE(tfm_serve::errorOf(parsed), nullptr) << name;
    EXPECT_EQ(tfm_serve::errorOf(parsed)->message,
              std::string("Invalid request: ") + name +
                  " must be an integer, found string");
  }
}

TEST(ServeRequest, SearchRulesAreLeftToTheRuntime) {
  auto native = [](const std::string &fields) {
    return parseNativeRequest(
        R"({"source": ["a"], "target_lang": "de", )" + fields + "}", kJson);
  };
  // The runtime's rules (Service::nativeSearch asks it): parsed here.
  for (const char *fields :
       {R"("beam_size": 0)", R"("n_best": -1)", R"("repetition_penalty": -1)",
        R"("sampling_topk": -1)", R"("sampling_topp": -0.5)"})
    EXPECT_EQ(tfm_serve::errorOf(native(fields)), nullptr) << fields;
  // The server's limit on the beam, and the C API's 0 for "the model's".
  auto message = [&](const std::string &fields) {
    auto parsed = native(fields);
    const HttpError *error = tfm_serve::errorOf(parsed);
    return error ? error->message : std::string();
  };
  EXPECT_EQ(message(R"("beam_size": 10)"),
            "Invalid request: beam_size must be at most 9 (the server's "
            "--max-alternatives + 1), found 10");
  EXPECT_EQ(message(R"("n_best": 10)"),
            "Invalid request: n_best must be at most 9 (the server's "
            "--max-alternatives + 1), found 10");
  EXPECT_EQ(message(R"("repetition_penalty": 0)"),
            "Invalid request: repetition_penalty 0 is no penalty: leave it "
            "out for the model's, 1 turns it off");
}

TEST(ServeRequest, KeysGivenTwiceAreRefused) {
  EXPECT_EQ(errorOf(R"({"q": "a", "source": "en", "target": "de",
                        "alternatives": 1, "alternatives": 2})")
                .message,
            "Invalid request: the key 'alternatives' appears twice in one "
            "object");
  // Per object: the same key in two objects is no repetition.
  EXPECT_EQ(
      errorOf(R"({"q": [{"k": 1}, {"k": 2}], "source": "en", "target": "de"})")
          .message,
      "Invalid request: q[0] must be a string, found object");
  EXPECT_EQ(errorOf(R"({"q": [{"k": 1, "k": 2}], "target": "de"})").message,
            "Invalid request: the key 'k' appears twice in one object");
  auto native = parseNativeRequest(
      R"({"source": ["a"], "target_lang": "de", "source": ["b"]})", kJson);
  ASSERT_NE(tfm_serve::errorOf(native), nullptr);
  EXPECT_EQ(tfm_serve::errorOf(native)->message,
            "Invalid request: the key 'source' appears twice in one object");
  auto detect = parseDetectRequest(R"({"q": "a", "q": "b"})", kJson);
  ASSERT_NE(tfm_serve::errorOf(detect), nullptr);
  EXPECT_EQ(tfm_serve::errorOf(detect)->status, 400);
}

TEST(ServeRequest, NativeModelIsANonEmptyString) {
  auto named = parseNativeRequest(
      R"({"source": ["a"], "target_lang": "de", "model": "b"})", kJson);
  ASSERT_TRUE(std::holds_alternative<NativeRequest>(named));
  EXPECT_EQ(std::get<NativeRequest>(named).model, "b");
  for (const char *model : {"\"\"", "5"}) {
    auto bad = parseNativeRequest(
        std::string(R"({"source": ["a"], "target_lang": "de", "model": )") +
            model + "}",
        kJson);
    ASSERT_NE(tfm_serve::errorOf(bad), nullptr) << model;
    EXPECT_NE(tfm_serve::errorOf(bad)->message.find("model"),
              std::string::npos);
  }
}

TEST(ServeRequest, RandomBytesGiveErrorsNotCrashes) {
  std::mt19937 random(7);
  for (int i = 0; i < 2000; ++i) {
    std::string body(size_t(random() % 64), '\0');
    for (char &c : body)
      c = "{}[]\":,qa1\\u \xff"[random() % 15];
    for (const char *type : {kJson, "application/x-www-form-urlencoded"}) {
      Parsed<TranslateRequest> parsed = parseTranslateRequest(body, type);
      if (const HttpError *error = tfm_serve::errorOf(parsed))
        EXPECT_EQ(error->status, 400) << body;
    }
  }
}
