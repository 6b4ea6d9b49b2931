#!/bin/sh
# The fuzz_container test: generate the corpus, then run the fuzz target on all of it.
#   run_fuzz.sh MAKE_CORPUS DRIVER CORPUS_DIR
set -eu
make_corpus=$1 driver=$2 corpus=$3
rm -rf "$corpus"
"$make_corpus" "$corpus"
"$driver" "$corpus"
