// Half of an include cycle.
#pragma once
#include "model/second.hpp"
