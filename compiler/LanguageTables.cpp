//===- LanguageTables.cpp - The languages of multilingual models -*- C++
//-*-===//

#include "compiler/LanguageTables.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <map>

using namespace llvm;
using mlir::tfm::Language;

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

static SmallVector<StringRef> words(StringRef text) {
  SmallVector<StringRef> out;
  text.split(out, ' ', -1, /*KeepEmpty=*/false);
  return out;
}

SmallVector<Language> mlir::tfm::m2m100Languages(bool wmt21, int64_t firstId) {
  SmallVector<Language> languages;
  for (StringRef code : words(wmt21 ? kWmt21Codes : kM2M100Codes))
    languages.push_back({("__" + code + "__").str(),
                         firstId + int64_t(languages.size()),
                         {code.str()}});
  return languages;
}

SmallVector<Language> mlir::tfm::fairseqLanguages(StringRef kind,
                                                  int64_t firstId) {
  SmallVector<Language> languages;
  StringMap<int> prefixes; // ISO 639-3 part of NLLB's codes
  for (StringRef code : words(kind == "nllb" ? kNllbCodes : kMBart50Codes)) {
    languages.push_back({code.str(), firstId + int64_t(languages.size()), {}});
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
  return languages;
}

SmallVector<Language>
mlir::tfm::madladLanguages(const SentencePieceSummary &spm) {
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
