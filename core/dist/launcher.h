// The launcher's declarations are public (forja/dist.h); this header is what the dist area's files include.
#pragma once

#include "forja/dist.h"
