/* A stand-in for a libtranslator.so of another C API version. */
int tfm_c_api_version(void) { return 99; }
