// The other half of an include cycle.
#pragma once
#include "model/first.hpp"
