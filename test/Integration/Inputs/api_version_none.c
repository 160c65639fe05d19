/* A stand-in for a libtranslator.so from before tfm_c_api_version. */
int tfm_status_message(void) { return 0; }
