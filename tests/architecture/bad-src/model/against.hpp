// A model header that reaches up into app/: against the arrows.
#pragma once
#include "app/commands.hpp"
