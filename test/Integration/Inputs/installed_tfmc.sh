#!/bin/sh
# The tools of an installed prefix, found on PATH as a user's shell finds
# them (here, where lit cannot put its own paths in their place): prints
# where tfmc and tfm-serve are, then compiles MODEL_DIR into OUT_DIR.
#   installed_tfmc.sh PREFIX MODEL_DIR OUT_DIR
set -eu
PATH=$1/bin:/usr/bin:/bin
export PATH
command -v tfmc
command -v tfm-serve
tfmc compile "$2" -o "$3"
