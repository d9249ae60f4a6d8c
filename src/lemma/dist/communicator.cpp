#include "lemma/dist/communicator.h"
