// The npm packages libretranslate and libretranslate-extended (written by
// others, installed from this directory's lockfile) against a LibreTranslate
// server at URL, for test/Serve/serve-npm-clients.test. Reads a JSON object
// {"english": [...], "german": [...]} and prints, as JSON, what the
// clients answered: node clients.js URL INPUT_JSON (with
// NODE_PATH naming the node_modules installed from here).
"use strict";

const fs = require("fs");
const { translate } = require("libretranslate");
const extended = require("libretranslate-extended");
// The provider's own calls (by path: the package exports only translate
// and detectLanguage): /detect without detectLanguage's fallback to
// /translate, and /translate's whole answer.
const path = require("path");
const provider = require(path.join(path.dirname(require.resolve("libretranslate-extended")),
                                   "providers", "libretranslate.js"));

async function main() {
  const [url, inputPath] = process.argv.slice(2);
  const input = JSON.parse(fs.readFileSync(inputPath, "utf8"));
  const config = { provider: "libretranslate", baseUrl: url };
  const out = {};
  // libretranslate: source auto, one text at a time.
  out.plainToGerman = [];
  for (const q of input.english)
    out.plainToGerman.push(await translate({ query: q, source: "auto", target: "de", apiurl: url }));
  out.plainToEnglish = [];
  for (const q of input.german)
    out.plainToEnglish.push(await translate({ query: q, target: "en", apiurl: url }));
  // libretranslate-extended: detection (its /detect), and translate with
  // its default source (auto), one text and a list.
  out.detected = [];
  for (const q of input.english.concat(input.german))
    out.detected.push(await extended.detectLanguage(q, config));
  out.detectTop = await provider.libreTranslateDetect(input.german[0], { baseUrl: url });
  out.extendedToGerman = await extended.translate({ query: input.english[0], target: "de" },
                                                  config);
  out.listToGerman = await provider.libreTranslateTranslate(
    { query: input.english, source: "auto", target: "de" }, { baseUrl: url });
  // Requests the server refuses: the package's error carries its message.
  try {
    await provider.libreTranslateDetect("", { baseUrl: url });
    out.emptyDetect = "accepted";
  } catch (error) {
    out.emptyDetect = String(error.message);
  }
  try {
    await extended.translate({ query: input.german[0], target: "de" }, config);
    out.germanToGerman = "accepted";
  } catch (error) {
    out.germanToGerman = String(error.message);
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((error) => {
  process.stderr.write(`clients.js: ${error.stack || error}\n`);
  process.exit(1);
});
