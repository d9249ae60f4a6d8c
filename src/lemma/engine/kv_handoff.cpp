#include "lemma/engine/kv_handoff.h"
