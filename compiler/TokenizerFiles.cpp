//===- TokenizerFiles.cpp - A model's tokenizer, carried along --*- C++ -*-===//
//
// The families' id rules are those of their Hugging Face tokenizers
// (tokenization_m2m_100.py, tokenization_nllb.py, tokenization_mbart50.py,
// tokenization_t5.py):
//
//   M2M-100    vocab.json gives the pieces' ids; the language tokens __xx__
//              follow at len(vocab.json) + their index in fairseq's list,
//              then the made-up words; source = __src__ pieces </s>
//   NLLB       fairseq's alignment: <s> 0, <pad> 1, </s> 2, <unk> 3, a
//              piece's id SentencePiece's + 1; the codes (eng_Latn) at
//              pieces + 1 + index, then <mask>; source = src pieces </s>
//              (legacy_behaviour: pieces </s> src)
//   mBART-50   the same alignment with its 52 codes (en_XX);
//              source = src pieces </s>
//
// and the target language's token is forced first (forced_bos_token_id).
//
//   T5, mT5    SentencePiece's own ids (<pad> 0, </s> 1, <unk> 2), the
//              sentinels <extra_id_N> after the pieces, counting down;
//              source = pieces </s>
//   MADLAD-400 T5's, with target languages among the pieces (<2de>): the
//              target's token goes in the source, as "<2de> text" is cut
//              (▁ <2de> pieces </s>), and nothing is forced
//
//===----------------------------------------------------------------------===//

#include "compiler/TokenizerFiles.h"

#include "compiler/MarianCheckpoint.h"
#include "tfm/abi/EmbeddedFiles.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <map>

using namespace llvm;
using mlir::tfm::TokenizerFiles;
using mlir::tfm::TokenizerTarget;

static const char *const kTokenizerFileNames[] = {"source.spm", "target.spm",
                                                  "vocab.json"};
static const char kSentencePieceName[] = "sentencepiece.bpe.model";
static const char kT5SentencePieceName[] = "spiece.model";

// fairseq's language lists, in the order the tokenizers number them.
static const char kM2M100Codes[] =
    "af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff "
    "fi fr fy ga gd gl gu ha he hi hr ht hu hy id ig ilo is it ja jv ka kk "
    "km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne nl no ns oc or pa pl "
    "ps pt ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi "
    "wo xh yi yo zh zu";
static const char kWmt21Codes[] = "en ha is ja cs ru zh de";
static const char kMBart50Codes[] =
    "ar_AR cs_CZ de_DE en_XX es_XX et_EE fi_FI fr_XX gu_IN hi_IN it_IT ja_XX "
    "kk_KZ ko_KR lt_LT lv_LV my_MM ne_NP nl_XX ro_RO ru_RU si_LK tr_TR vi_VN "
    "zh_CN af_ZA az_AZ bn_IN fa_IR he_IL hr_HR id_ID ka_GE km_KH mk_MK ml_IN "
    "mn_MN mr_IN pl_PL ps_AF pt_XX sv_SE sw_KE ta_IN te_IN th_TH tl_XX uk_UA "
    "ur_PK xh_ZA gl_ES sl_SI";
static const char kNllbCodes[] =
    "ace_Arab ace_Latn acm_Arab acq_Arab aeb_Arab afr_Latn ajp_Arab aka_Latn "
    "amh_Ethi apc_Arab arb_Arab ars_Arab ary_Arab arz_Arab asm_Beng ast_Latn "
    "awa_Deva ayr_Latn azb_Arab azj_Latn bak_Cyrl bam_Latn ban_Latn bel_Cyrl "
    "bem_Latn ben_Beng bho_Deva bjn_Arab bjn_Latn bod_Tibt bos_Latn bug_Latn "
    "bul_Cyrl cat_Latn ceb_Latn ces_Latn cjk_Latn ckb_Arab crh_Latn cym_Latn "
    "dan_Latn deu_Latn dik_Latn dyu_Latn dzo_Tibt ell_Grek eng_Latn epo_Latn "
    "est_Latn eus_Latn ewe_Latn fao_Latn pes_Arab fij_Latn fin_Latn fon_Latn "
    "fra_Latn fur_Latn fuv_Latn gla_Latn gle_Latn glg_Latn grn_Latn guj_Gujr "
    "hat_Latn hau_Latn heb_Hebr hin_Deva hne_Deva hrv_Latn hun_Latn hye_Armn "
    "ibo_Latn ilo_Latn ind_Latn isl_Latn ita_Latn jav_Latn jpn_Jpan kab_Latn "
    "kac_Latn kam_Latn kan_Knda kas_Arab kas_Deva kat_Geor knc_Arab knc_Latn "
    "kaz_Cyrl kbp_Latn kea_Latn khm_Khmr kik_Latn kin_Latn kir_Cyrl kmb_Latn "
    "kon_Latn kor_Hang kmr_Latn lao_Laoo lvs_Latn lij_Latn lim_Latn lin_Latn "
    "lit_Latn lmo_Latn ltg_Latn ltz_Latn lua_Latn lug_Latn luo_Latn lus_Latn "
    "mag_Deva mai_Deva mal_Mlym mar_Deva min_Latn mkd_Cyrl plt_Latn mlt_Latn "
    "mni_Beng khk_Cyrl mos_Latn mri_Latn zsm_Latn mya_Mymr nld_Latn nno_Latn "
    "nob_Latn npi_Deva nso_Latn nus_Latn nya_Latn oci_Latn gaz_Latn ory_Orya "
    "pag_Latn pan_Guru pap_Latn pol_Latn por_Latn prs_Arab pbt_Arab quy_Latn "
    "ron_Latn run_Latn rus_Cyrl sag_Latn san_Deva sat_Beng scn_Latn shn_Mymr "
    "sin_Sinh slk_Latn slv_Latn smo_Latn sna_Latn snd_Arab som_Latn sot_Latn "
    "spa_Latn als_Latn srd_Latn srp_Cyrl ssw_Latn sun_Latn swe_Latn swh_Latn "
    "szl_Latn tam_Taml tat_Cyrl tel_Telu tgk_Cyrl tgl_Latn tha_Thai tir_Ethi "
    "taq_Latn taq_Tfng tpi_Latn tsn_Latn tso_Latn tuk_Latn tum_Latn tur_Latn "
    "twi_Latn tzm_Tfng uig_Arab ukr_Cyrl umb_Latn urd_Arab uzn_Latn vec_Latn "
    "vie_Latn war_Latn wol_Latn xho_Latn ydd_Hebr yor_Latn yue_Hant zho_Hans "
    "zho_Hant zul_Latn";
// ISO 639-1 codes of NLLB's languages: for a macrolanguage its standard
// variety (ar: Modern Standard Arabic, zh: Simplified Chinese, fa: Western
// Persian), for a language in two scripts its usual one.
static const char kNllbIso639_1[] =
    "af:afr_Latn ak:aka_Latn am:amh_Ethi ar:arb_Arab as:asm_Beng ay:ayr_Latn "
    "az:azj_Latn ba:bak_Cyrl be:bel_Cyrl bg:bul_Cyrl bm:bam_Latn bn:ben_Beng "
    "bo:bod_Tibt bs:bos_Latn ca:cat_Latn cs:ces_Latn cy:cym_Latn da:dan_Latn "
    "de:deu_Latn dz:dzo_Tibt ee:ewe_Latn el:ell_Grek en:eng_Latn eo:epo_Latn "
    "es:spa_Latn et:est_Latn eu:eus_Latn fa:pes_Arab ff:fuv_Latn fi:fin_Latn "
    "fj:fij_Latn fo:fao_Latn fr:fra_Latn ga:gle_Latn gd:gla_Latn gl:glg_Latn "
    "gn:grn_Latn gu:guj_Gujr ha:hau_Latn he:heb_Hebr hi:hin_Deva hr:hrv_Latn "
    "ht:hat_Latn hu:hun_Latn hy:hye_Armn id:ind_Latn ig:ibo_Latn is:isl_Latn "
    "it:ita_Latn ja:jpn_Jpan jv:jav_Latn ka:kat_Geor kg:kon_Latn ki:kik_Latn "
    "kk:kaz_Cyrl km:khm_Khmr kn:kan_Knda ko:kor_Hang ks:kas_Arab ku:kmr_Latn "
    "ky:kir_Cyrl lb:ltz_Latn lg:lug_Latn li:lim_Latn ln:lin_Latn lo:lao_Laoo "
    "lt:lit_Latn lv:lvs_Latn mg:plt_Latn mi:mri_Latn mk:mkd_Cyrl ml:mal_Mlym "
    "mn:khk_Cyrl mr:mar_Deva ms:zsm_Latn mt:mlt_Latn my:mya_Mymr nb:nob_Latn "
    "ne:npi_Deva nl:nld_Latn nn:nno_Latn no:nob_Latn ny:nya_Latn oc:oci_Latn "
    "om:gaz_Latn or:ory_Orya pa:pan_Guru pl:pol_Latn ps:pbt_Arab pt:por_Latn "
    "qu:quy_Latn rn:run_Latn ro:ron_Latn ru:rus_Cyrl rw:kin_Latn sa:san_Deva "
    "sc:srd_Latn sd:snd_Arab sg:sag_Latn si:sin_Sinh sk:slk_Latn sl:slv_Latn "
    "sm:smo_Latn sn:sna_Latn so:som_Latn sq:als_Latn sr:srp_Cyrl ss:ssw_Latn "
    "st:sot_Latn su:sun_Latn sv:swe_Latn sw:swh_Latn ta:tam_Taml te:tel_Telu "
    "tg:tgk_Cyrl th:tha_Thai ti:tir_Ethi tk:tuk_Latn tl:tgl_Latn tn:tsn_Latn "
    "tr:tur_Latn ts:tso_Latn tt:tat_Cyrl tw:twi_Latn ug:uig_Arab uk:ukr_Cyrl "
    "ur:urd_Arab uz:uzn_Latn vi:vie_Latn wo:wol_Latn xh:xho_Latn yi:ydd_Hebr "
    "yo:yor_Latn zh:zho_Hans zu:zul_Latn";

static Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message.str());
}

static std::string pathIn(StringRef dir, StringRef name) {
  SmallString<256> path(dir);
  sys::path::append(path, name);
  return path.str().str();
}

static SmallVector<StringRef> words(StringRef text) {
  SmallVector<StringRef> out;
  text.split(out, ' ', -1, /*KeepEmpty=*/false);
  return out;
}

static Expected<json::Value> readJson(StringRef path) {
  auto text = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!text)
    return fail(path + ": " + text.getError().message());
  Expected<json::Value> parsed = json::parse((*text)->getBuffer());
  if (!parsed)
    return fail(path + ": not valid JSON: " + toString(parsed.takeError()));
  return parsed;
}

/// The checks of vocab.json that need no SentencePiece, so that a bad one
/// fails here rather than in every run of the translator (which checks the
/// .spm files too).
static Error checkVocabulary(StringRef path, int64_t vocabSize,
                             int64_t eosTokenId) {
  Expected<json::Value> parsed = readJson(path);
  if (!parsed)
    return parsed.takeError();
  const json::Object *vocab = parsed->getAsObject();
  if (!vocab)
    return fail(path + ": expected a JSON object from pieces to ids");
  if (int64_t(vocab->size()) != vocabSize)
    return fail(path + ": " + Twine(vocab->size()) +
                " pieces, but the model's vocabulary has " + Twine(vocabSize));
  std::optional<int64_t> eos = vocab->getInteger("</s>");
  if (!eos)
    return fail(path + ": no entry for </s>");
  if (*eos != eosTokenId)
    return fail(path + ": </s> has id " + Twine(*eos) +
                ", but the model's is " + Twine(eosTokenId));
  if (!vocab->getInteger("<unk>"))
    return fail(path + ": no entry for <unk>");
  return Error::success();
}

/// The one `*.vocab.yml` of a Marian release in `modelDir`, or "".
static std::string marianVocabulary(StringRef modelDir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (sys::fs::directory_iterator it(modelDir, ec), end; it != end && !ec;
       it.increment(ec))
    if (StringRef(it->path()).ends_with("vocab.yml"))
      found.push_back(it->path());
  return found.size() == 1 ? found[0] : "";
}

Expected<SmallVector<std::string, 3>>
mlir::tfm::findTokenizerFiles(StringRef modelDir, int64_t vocabSize,
                              int64_t eosTokenId, StringRef outDir) {
  SmallVector<std::string, 3> present, missing;
  for (const char *name : kTokenizerFileNames) {
    std::string path = pathIn(modelDir, name);
    (sys::fs::exists(path) ? present : missing).push_back(path);
  }
  if (present.empty())
    return present;
  // Marian's layout: vocab.json made from its vocab.yml.
  std::string yml = marianVocabulary(modelDir);
  if (missing.size() == 1 && sys::path::filename(missing[0]) == "vocab.json" &&
      !yml.empty()) {
    Expected<std::string> json = marianVocabularyJson(yml);
    if (!json)
      return json.takeError();
    std::string generated = pathIn(outDir, "vocab.json");
    std::error_code ec;
    raw_fd_ostream out(generated, ec);
    if (ec)
      return fail(generated + ": " + ec.message());
    out << *json;
    out.close();
    if (out.has_error())
      return fail(generated + ": " + out.error().message());
    present.push_back(generated);
    missing.clear();
  }
  if (!missing.empty())
    return fail(present.front() + " is there but not " + join(missing, ", ") +
                ": a tokenizer needs source.spm, target.spm and vocab.json "
                "(or a Marian *.vocab.yml)");
  if (Error err = checkVocabulary(present.back(), vocabSize, eosTokenId))
    return std::move(err);
  return present;
}

//===----------------------------------------------------------------------===//
// What the families' files hold
//===----------------------------------------------------------------------===//

namespace {

/// What tfmc needs of a SentencePiece model, read from the serialized
/// ModelProto so that tfmc needs no SentencePiece library: its field 1,
/// repeated, is the pieces (a piece's field 1 its text); its field 3 the
/// NormalizerSpec, whose field 3 is add_dummy_prefix (true unless given).
struct SentencePieceSummary {
  std::vector<std::string> pieces; // every piece's text, in id order
  bool dummyPrefix = true; // "▁" put before a text, as if it began a word
};

/// One field of a protocol buffer message.
struct ProtoField {
  uint64_t number = 0;
  uint64_t wireType = 0; // 0: a varint, 2: length-delimited, ...
  StringRef payload;     // a length-delimited field's bytes
  uint64_t value = 0;    // a varint's value
};

class ProtoReader {
public:
  explicit ProtoReader(StringRef bytes) : bytes(bytes) {}
  bool done() const { return pos >= bytes.size(); }
  bool varint(uint64_t &value) {
    value = 0;
    for (int shift = 0; shift < 64 && pos < bytes.size(); shift += 7) {
      uint8_t byte = uint8_t(bytes[pos++]);
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return false;
  }
  /// The next field; false when the bytes are not a message.
  bool field(ProtoField &out) {
    uint64_t key, length;
    if (!varint(key))
      return false;
    out = ProtoField();
    out.number = key >> 3;
    out.wireType = key & 7;
    switch (out.wireType) {
    case 0:
      return varint(out.value);
    case 1:
      return skip(8);
    case 5:
      return skip(4);
    case 2:
      if (!varint(length) || length > bytes.size() - pos)
        return false;
      out.payload = bytes.substr(pos, length);
      pos += length;
      return true;
    default:
      return false;
    }
  }

private:
  bool skip(size_t n) {
    if (n > bytes.size() - pos)
      return false;
    pos += n;
    return true;
  }
  StringRef bytes;
  size_t pos = 0;
};

/// The text of a serialized SentencePiece (its field 1).
std::string pieceText(StringRef piece) {
  ProtoReader fields(piece);
  ProtoField f;
  std::string text;
  while (!fields.done() && fields.field(f))
    if (f.number == 1)
      text = f.payload.str();
  return text;
}

/// NormalizerSpec's add_dummy_prefix (its field 3).
bool addsDummyPrefix(StringRef normalizerSpec) {
  ProtoReader fields(normalizerSpec);
  ProtoField f;
  bool dummyPrefix = true;
  while (!fields.done() && fields.field(f))
    if (f.number == 3 && f.wireType == 0)
      dummyPrefix = f.value != 0;
  return dummyPrefix;
}

Expected<SentencePieceSummary> readSentencePiece(StringRef path) {
  auto bytes = MemoryBuffer::getFile(path, /*IsText=*/false,
                                     /*RequiresNullTerminator=*/false);
  if (!bytes)
    return fail(path + ": " + bytes.getError().message());
  SentencePieceSummary summary;
  ProtoReader model((*bytes)->getBuffer());
  ProtoField f;
  while (!model.done()) {
    if (!model.field(f))
      return fail(path + ": not a SentencePiece model (a serialized "
                         "ModelProto)");
    if (f.number == 1)
      summary.pieces.push_back(pieceText(f.payload));
    else if (f.number == 3)
      summary.dummyPrefix = addsDummyPrefix(f.payload);
  }
  if (summary.pieces.empty())
    return fail(path + ": not a SentencePiece model: it has no pieces");
  return summary;
}

/// One language token of a multilingual model.
struct Language {
  std::string code;
  int64_t id;
  SmallVector<std::string, 3> names; // other names that choose it
};

/// The description the runtime reads (tfm/abi/EmbeddedFiles.h).
struct Description {
  std::string kind;
  std::string text; // the records after the header and kind
  raw_string_ostream os{text};
  void languages(ArrayRef<Language> all) {
    for (const Language &l : all) {
      os << "language " << l.code << " " << l.id;
      for (const std::string &name : l.names)
        os << " " << name;
      os << "\n";
    }
  }
  void fairseqSpecials() {
    os << "special <s> 0\nspecial <pad> 1\nspecial </s> 2\nspecial <unk> 3\n";
  }
};

/// The family's files and checks, for one model.
class FamilyTokenizer {
public:
  FamilyTokenizer(StringRef dir, const TokenizerTarget &model)
      : dir(dir), model(model) {}

  Expected<TokenizerFiles> find(StringRef outDir);

private:
  Error readTokenizerConfig();
  StringRef configString(StringRef key, StringRef otherwise) const;
  Expected<bool> m2m100(Description &d);
  Expected<bool> fairseqAligned(Description &d, StringRef kind, StringRef codes,
                                StringRef defaultSource);
  Expected<bool> multilingual(Description &d);
  Expected<bool> t5(Description &d, StringRef outDir);
  void describeT5(Description &d, const SentencePieceSummary &spm,
                  int64_t sentinels, ArrayRef<Language> languages) const;
  Expected<bool> marianLayout(Description &d, StringRef outDir);
  Expected<bool> describe(Description &d, StringRef outDir);
  Error checkSize(const Twine &what, int64_t size) const;
  Error checkFairseqSpecials(StringRef path,
                             const SentencePieceSummary &spm) const;
  Error checkT5Specials(StringRef path, const SentencePieceSummary &spm) const;
  Expected<int64_t> sentinelCount() const;
  Error checkPair(StringRef table) const;
  std::string defaultSource(ArrayRef<Language> languages,
                            StringRef fallback) const;

  StringRef dir;
  const TokenizerTarget &model;
  json::Object tokenizerConfig; // tokenizer_config.json, if any
  SmallVector<std::string, 4> files;
  std::string warning;
};

} // namespace

Error FamilyTokenizer::readTokenizerConfig() {
  std::string path = pathIn(dir, "tokenizer_config.json");
  if (!sys::fs::exists(path))
    return Error::success();
  Expected<json::Value> parsed = readJson(path);
  if (!parsed)
    return parsed.takeError();
  if (json::Object *object = parsed->getAsObject())
    tokenizerConfig = std::move(*object);
  return Error::success();
}

StringRef FamilyTokenizer::configString(StringRef key,
                                        StringRef otherwise) const {
  std::optional<StringRef> value = tokenizerConfig.getString(key);
  return value ? *value : otherwise;
}

Error FamilyTokenizer::checkSize(const Twine &what, int64_t size) const {
  if (size <= model.vocabSize)
    return Error::success();
  return fail(what + " = " + Twine(size) +
              " token ids, but the model's "
              "vocabulary has " +
              Twine(model.vocabSize));
}

/// The first pieces an id rule assumes (`whose`: the rule, for the
/// message), as SentencePiece's special pieces.
static Error checkFirstPieces(StringRef path, const SentencePieceSummary &spm,
                              ArrayRef<const char *> expected,
                              StringRef whose) {
  for (size_t i = 0; i < expected.size(); ++i)
    if (i >= spm.pieces.size() || spm.pieces[i] != expected[i])
      return fail(path + ": piece " + Twine(i) + " is \"" +
                  (i < spm.pieces.size() ? spm.pieces[i] : "") + "\", but " +
                  whose + " need " + join(expected, ", ") + " first");
  return Error::success();
}

/// fairseq's alignment holds only where SentencePiece's first pieces are
/// <unk>, <s>, </s>, and the model's EOS is fairseq's.
Error FamilyTokenizer::checkFairseqSpecials(
    StringRef path, const SentencePieceSummary &spm) const {
  if (Error err = checkFirstPieces(path, spm, {"<unk>", "<s>", "</s>"},
                                   "fairseq's ids"))
    return err;
  if (model.eosTokenId != 2)
    return fail(path + ": </s> is token 2, but the model's EOS is " +
                Twine(model.eosTokenId));
  return Error::success();
}

/// T5's ids are SentencePiece's own: its first pieces are T5's specials
/// (spm_train --pad_id=0 --eos_id=1 --unk_id=2), the model's EOS and
/// padding theirs.
Error FamilyTokenizer::checkT5Specials(StringRef path,
                                       const SentencePieceSummary &spm) const {
  if (Error err =
          checkFirstPieces(path, spm, {"<pad>", "</s>", "<unk>"}, "T5's ids"))
    return err;
  if (model.eosTokenId != 1)
    return fail(path + ": </s> is token 1, but the model's EOS is " +
                Twine(model.eosTokenId));
  if (model.padTokenId >= 0 && model.padTokenId != 0)
    return fail(path + ": <pad> is token 0, but the model's padding is " +
                Twine(model.padTokenId));
  return Error::success();
}

/// Languages given to tfmc are for models of one pair.
Error FamilyTokenizer::checkPair(StringRef table) const {
  if (model.sourceLang.empty())
    return Error::success();
  return fail("--source-lang/--target-lang: a " + model.modelType +
              " model has a language table (" + table +
              "); its languages are given per translation (translator "
              "--source-lang/--target-lang), not to tfmc");
}

std::string FamilyTokenizer::defaultSource(ArrayRef<Language> languages,
                                           StringRef fallback) const {
  StringRef wanted = configString("src_lang", fallback);
  for (const Language &l : languages)
    if (l.code == wanted || llvm::is_contained(l.names, wanted))
      return l.code;
  return fallback.str();
}

Expected<bool> FamilyTokenizer::m2m100(Description &d) {
  std::string vocabPath = pathIn(dir, "vocab.json");
  Expected<json::Value> parsed = readJson(vocabPath);
  if (!parsed)
    return parsed.takeError();
  const json::Object *vocab = parsed->getAsObject();
  if (!vocab)
    return fail(vocabPath + ": expected a JSON object from pieces to ids");
  int64_t count = int64_t(vocab->size());
  for (const auto &[piece, id] : *vocab) {
    std::optional<int64_t> value = id.getAsInteger();
    if (!value || *value < 0 || *value >= count)
      return fail(vocabPath + ": piece \"" + piece.str() + "\" has id " +
                  (value ? std::to_string(*value) : "null") + ", outside [0, " +
                  Twine(count) +
                  "): M2M-100's language tokens follow the pieces");
  }
  std::optional<int64_t> eos = vocab->getInteger("</s>");
  if (!eos)
    return fail(vocabPath + ": no entry for </s>");
  if (*eos != model.eosTokenId)
    return fail(vocabPath + ": </s> has id " + Twine(*eos) +
                ", but the model's is " + Twine(model.eosTokenId));
  if (!vocab->getInteger("<unk>"))
    return fail(vocabPath + ": no entry for <unk>");
  StringRef set = configString("language_codes", "m2m100");
  if (set != "m2m100" && set != "wmt21")
    return fail(pathIn(dir, "tokenizer_config.json") + ": language_codes \"" +
                set + "\" is none of M2M-100's (m2m100, wmt21)");
  int64_t madeUp = tokenizerConfig.getInteger("num_madeup_words").value_or(8);
  SmallVector<Language> languages;
  for (StringRef code : words(set == "wmt21" ? kWmt21Codes : kM2M100Codes))
    languages.push_back({("__" + code + "__").str(),
                         count + int64_t(languages.size()),
                         {code.str()}});
  int64_t size = count + int64_t(languages.size()) + madeUp;
  if (Error err =
          checkSize(vocabPath + ": " + Twine(count) + " pieces + " +
                        Twine(languages.size()) + " language tokens + " +
                        Twine(madeUp) + " made-up words",
                    size))
    return std::move(err);
  std::string spm = pathIn(dir, kSentencePieceName);
  bool text = sys::fs::exists(spm);
  if (text) {
    if (Expected<SentencePieceSummary> s = readSentencePiece(spm); !s)
      return s.takeError();
    files.append({spm, vocabPath});
    d.os << "source-spm " << kSentencePieceName << "\ntarget-spm "
         << kSentencePieceName << "\nvocab vocab.json " << count << "\n";
  }
  d.os << "size " << size << "\n";
  for (const char *special : {"<s>", "<pad>", "</s>", "<unk>"})
    if (std::optional<int64_t> id = vocab->getInteger(special))
      d.os << "special " << special << " " << *id << "\n";
  d.languages(languages);
  d.os << "default-source " << defaultSource(languages, "__en__") << "\n"
       << "source-prefix source\nsource-suffix " << model.eosTokenId << "\n"
       << "target-prefix target\n";
  d.kind = "m2m100";
  return true;
}

/// NLLB's and mBART-50's layout: ids aligned to fairseq's, the codes after
/// the pieces. Without sentencepiece.bpe.model the ids are unknown: the
/// model has no tokenizer and no languages (false).
Expected<bool> FamilyTokenizer::fairseqAligned(Description &d, StringRef kind,
                                               StringRef codes,
                                               StringRef fallbackSource) {
  std::string spm = pathIn(dir, kSentencePieceName);
  if (!sys::fs::exists(spm))
    return false;
  Expected<SentencePieceSummary> summary = readSentencePiece(spm);
  if (!summary)
    return summary.takeError();
  if (Error err = checkFairseqSpecials(spm, *summary))
    return std::move(err);
  int64_t n = int64_t(summary->pieces.size());
  SmallVector<Language> languages;
  StringMap<int> prefixes; // ISO 639-3 part of NLLB's codes
  for (StringRef code : words(codes)) {
    languages.push_back({code.str(), n + 1 + int64_t(languages.size()), {}});
    ++prefixes[code.split('_').first];
  }
  std::map<std::string, SmallVector<std::string, 2>> iso;
  for (StringRef pair : words(kind == "nllb" ? kNllbIso639_1 : ""))
    iso[pair.split(':').second.str()].push_back(pair.split(':').first.str());
  for (Language &l : languages) {
    StringRef prefix = StringRef(l.code).split('_').first;
    if (kind == "mbart50")
      l.names.push_back(prefix.str());
    for (const std::string &name : iso[l.code])
      l.names.push_back(name);
    if (kind == "nllb" && prefixes[prefix] == 1)
      l.names.push_back(prefix.str());
  }
  int64_t mask = n + 1 + int64_t(languages.size());
  if (Error err =
          checkSize(spm + ": " + Twine(n) +
                        " pieces + 1 (fairseq's "
                        "<pad>) + " +
                        Twine(languages.size()) + " language codes + <mask>",
                    mask + 1))
    return std::move(err);
  files.push_back(spm);
  d.os << "source-spm " << kSentencePieceName << "\ntarget-spm "
       << kSentencePieceName << "\noffset 1\nsize " << mask + 1 << "\n";
  d.fairseqSpecials();
  d.os << "special <mask> " << mask << "\n";
  d.languages(languages);
  d.os << "default-source " << defaultSource(languages, fallbackSource) << "\n";
  if (kind == "nllb" &&
      tokenizerConfig.getBoolean("legacy_behaviour").value_or(false))
    d.os << "source-prefix\nsource-suffix 2 source\n";
  else
    d.os << "source-prefix source\nsource-suffix 2\n";
  d.os << "target-prefix target\n";
  d.kind = kind.str();
  return true;
}

/// M2M-100 and NLLB (model_type m2m_100: tokenizer_config.json's class
/// tells them apart, else M2M-100's vocab.json) and mBART-50 (mbart).
Expected<bool> FamilyTokenizer::multilingual(Description &d) {
  if (Error err = checkPair(kSentencePieceName))
    return std::move(err);
  StringRef tokenizerClass = configString("tokenizer_class", "");
  if (model.modelType == "mbart") {
    if (!tokenizerClass.starts_with("MBartTok"))
      return fairseqAligned(d, "mbart50", kMBart50Codes, "en_XX");
    warning = "the mBART-25 tokenizer (" + tokenizerClass.str() +
              ") is not supported: the translator reads and writes ids";
    return false;
  }
  if (tokenizerClass.starts_with("Nllb") ||
      !sys::fs::exists(pathIn(dir, "vocab.json")))
    return fairseqAligned(d, "nllb", kNllbCodes, "eng_Latn");
  return m2m100(d);
}

/// tokenizer_config.json's extra_ids: T5Tokenizer's sentinels, 100 unless
/// it says otherwise.
Expected<int64_t> FamilyTokenizer::sentinelCount() const {
  const json::Value *value = tokenizerConfig.get("extra_ids");
  if (!value)
    return 100;
  std::optional<int64_t> count = value->getAsInteger();
  if (!count || *count < 0)
    return fail(pathIn(dir, "tokenizer_config.json") + ": extra_ids is " +
                formatv("{0}", *value) + ", not a number of sentinels");
  return *count;
}

/// MADLAD-400's target languages: its pieces <2xx> (<2de>, <2pt_BR>,
/// <2zxx_xx_dtynoise>), plain pieces of the SentencePiece model (not
/// special tokens), chosen by the code inside them too.
static SmallVector<Language> madladLanguages(const SentencePieceSummary &spm) {
  auto isCodeChar = [](char c) { return isAlnum(c) || c == '_' || c == '-'; };
  SmallVector<Language> languages;
  for (size_t id = 0; id < spm.pieces.size(); ++id) {
    StringRef code = spm.pieces[id];
    if (code.consume_front("<2") && code.consume_back(">") && !code.empty() &&
        isAlpha(code.front()) && llvm::all_of(code, isCodeChar))
      languages.push_back({spm.pieces[id], int64_t(id), {code.str()}});
  }
  return languages;
}

/// The ids before the language's token in a source: MADLAD-400 is given
/// "<2de> text", which T5Tokenizer cuts with SentencePiece into "▁" "<2de>"
/// "▁text"...: the dummy prefix "▁" stays a piece of its own, since no
/// piece joins it to a user-defined symbol (<unk> where no piece is "▁"),
/// and the text's pieces are those it has alone.
static std::string languageLead(const SentencePieceSummary &spm) {
  if (!spm.dummyPrefix)
    return "";
  auto space = llvm::find(spm.pieces, "\xe2\x96\x81");
  int64_t id = space == spm.pieces.end() ? 2 : space - spm.pieces.begin();
  return std::to_string(id) + " ";
}

/// T5Tokenizer's description: SentencePiece's ids, <pad> </s> <unk> first,
/// then the sentinels, counting down from the last (the rule is
/// tokenization_t5.py's _convert_token_to_id: <extra_id_N> is
/// vocab_size - N - 1, its vocab_size being the pieces + extra_ids), and
/// the languages; source = pieces </s>, MADLAD-400's language token before
/// them when a target language is given (nothing is forced on the target).
void FamilyTokenizer::describeT5(Description &d,
                                 const SentencePieceSummary &spm,
                                 int64_t sentinels,
                                 ArrayRef<Language> languages) const {
  int64_t numbered = int64_t(spm.pieces.size()) + sentinels;
  int64_t size = std::min(numbered, model.vocabSize);
  d.os << "source-spm " << kT5SentencePieceName << "\ntarget-spm "
       << kT5SentencePieceName << "\noffset 0\nsize " << size
       << "\nspecial <pad> 0\nspecial </s> 1\nspecial <unk> 2\n";
  for (int64_t n = 0; n < sentinels; ++n)
    if (numbered - 1 - n < size)
      d.os << "special <extra_id_" << n << "> " << numbered - 1 - n << "\n";
  d.languages(languages);
  d.os << "source-suffix " << model.eosTokenId << "\n";
  if (!languages.empty())
    d.os << "source-prefix-with-target " << languageLead(spm) << "target\n";
  else if (!model.sourceLang.empty())
    d.os << "pair " << model.sourceLang << " " << model.targetLang << "\n";
  d.kind = "t5";
}

/// T5, mT5 and MADLAD-400 (t5, mt5) with spiece.model; without it, a
/// model of Marian's layout or none.
Expected<bool> FamilyTokenizer::t5(Description &d, StringRef outDir) {
  std::string spm = pathIn(dir, kT5SentencePieceName);
  if (!sys::fs::exists(spm))
    return marianLayout(d, outDir);
  Expected<SentencePieceSummary> summary = readSentencePiece(spm);
  if (!summary)
    return summary.takeError();
  if (Error err = checkT5Specials(spm, *summary))
    return std::move(err);
  Expected<int64_t> sentinels = sentinelCount();
  if (!sentinels)
    return sentinels.takeError();
  int64_t pieces = int64_t(summary->pieces.size());
  if (Error err = checkSize(spm + ": " + Twine(pieces) + " pieces", pieces))
    return std::move(err);
  // Checkpoints whose rows stop at the pieces (MADLAD-400's 256000) still
  // get T5Tokenizer's numbering; the sentinels it puts past the rows could
  // not be embedded, and a translation never needs them.
  int64_t past = pieces + *sentinels - model.vocabSize;
  if (past > 0)
    warning = (spm + ": " + Twine(past) + " of the " + Twine(*sentinels) +
               " sentinels <extra_id_N> (tokenizer_config.json's extra_ids, "
               "100 unless given) have ids past the model's vocabulary of " +
               Twine(model.vocabSize) + " and are left out")
                  .str();
  SmallVector<Language> languages = madladLanguages(*summary);
  if (!languages.empty())
    if (Error err = checkPair(kT5SentencePieceName))
      return std::move(err);
  files.push_back(spm);
  describeT5(d, *summary, *sentinels, languages);
  return true;
}

/// Marian's layout (and no tokenizer for other families), described only
/// when tfmc was given the model's languages: without them the runtime
/// takes the layout as it always has.
Expected<bool> FamilyTokenizer::marianLayout(Description &d, StringRef outDir) {
  if (model.modelType == "bart" && sys::fs::exists(pathIn(dir, "merges.txt"))) {
    warning = "BART's byte-level BPE tokenizer (vocab.json, merges.txt) "
              "is not supported: the translator reads and writes ids";
  } else {
    Expected<SmallVector<std::string, 3>> marianFiles =
        mlir::tfm::findTokenizerFiles(dir, model.vocabSize, model.eosTokenId,
                                      outDir);
    if (!marianFiles)
      return marianFiles.takeError();
    files.append(marianFiles->begin(), marianFiles->end());
  }
  if (model.sourceLang.empty())
    return false;
  d.kind = files.empty() ? "none" : "marian";
  if (!files.empty()) {
    d.os << "source-spm source.spm\ntarget-spm target.spm\nvocab vocab.json "
         << model.vocabSize << "\nsize " << model.vocabSize << "\nspecial </s> "
         << model.eosTokenId << "\n";
    if (model.padTokenId >= 0)
      d.os << "special <pad> " << model.padTokenId << "\n";
    d.os << "source-suffix " << model.eosTokenId << "\n";
  }
  d.os << "pair " << model.sourceLang << " " << model.targetLang << "\n";
  return true;
}

/// The description of the model's family, if it has a tokenizer.
Expected<bool> FamilyTokenizer::describe(Description &d, StringRef outDir) {
  StringRef type = model.modelType;
  if (type == "m2m_100" || type == "mbart")
    return multilingual(d);
  if (type == "t5" || type == "mt5")
    return t5(d, outDir);
  return marianLayout(d, outDir);
}

Expected<TokenizerFiles> FamilyTokenizer::find(StringRef outDir) {
  if (Error err = readTokenizerConfig())
    return std::move(err);
  Description d;
  Expected<bool> described = describe(d, outDir);
  if (!described)
    return described.takeError();
  TokenizerFiles out;
  out.warning = warning;
  out.files = files;
  if (!*described)
    return out;
  std::string infoPath = pathIn(outDir, tfm_runtime::kTokenizerInfoName);
  std::error_code ec;
  raw_fd_ostream info(infoPath, ec);
  if (ec)
    return fail(infoPath + ": " + ec.message());
  info << tfm_runtime::kTokenizerInfoHeader << "\nkind " << d.kind << "\n"
       << d.text;
  info.close();
  if (info.has_error())
    return fail(infoPath + ": " + info.error().message());
  out.files.push_back(infoPath);
  return out;
}

Expected<TokenizerFiles>
mlir::tfm::findTokenizerFiles(StringRef modelDir, const TokenizerTarget &model,
                              StringRef outDir) {
  return FamilyTokenizer(modelDir, model).find(outDir);
}

Error mlir::tfm::copyTokenizerFiles(ArrayRef<std::string> files,
                                    StringRef outDir) {
  for (const std::string &file : files) {
    std::string target = pathIn(outDir, sys::path::filename(file));
    if (sys::fs::equivalent(file, target))
      continue;
    if (std::error_code ec = sys::fs::copy_file(file, target))
      return fail("copying " + file + " to " + target + ": " + ec.message());
  }
  return Error::success();
}

Error mlir::tfm::appendEmbeddedFiles(raw_ostream &out, uint64_t position,
                                     ArrayRef<std::string> files) {
  if (files.empty())
    return Error::success();
  std::vector<tfm_runtime::EmbeddedFile> table;
  for (const std::string &file : files) {
    auto bytes = MemoryBuffer::getFile(file, /*IsText=*/false,
                                       /*RequiresNullTerminator=*/false);
    if (!bytes)
      return fail(file + ": " + bytes.getError().message());
    StringRef name = sys::path::filename(file);
    tfm_runtime::EmbeddedFile entry{};
    if (name.size() >= sizeof entry.name)
      return fail(file + ": file name too long to embed");
    std::memcpy(entry.name, name.data(), name.size());
    entry.offset = position;
    entry.size = (*bytes)->getBufferSize();
    out << (*bytes)->getBuffer();
    position += entry.size;
    table.push_back(entry);
  }
  out.write(reinterpret_cast<const char *>(table.data()),
            table.size() * sizeof(table[0]));
  tfm_runtime::EmbeddedFilesTrailer trailer{table.size(), {}};
  std::memcpy(trailer.magic, tfm_runtime::kEmbeddedFilesMagic, 8);
  out.write(reinterpret_cast<const char *>(&trailer), sizeof trailer);
  return Error::success();
}
