// The precompiled header of the test executables' unity batches (tests/CMakeLists.txt,
// NVTE_UNITY_BUILD): the libraries' header (cmake/pch.hpp) and GoogleTest/GoogleMock, which every
// test file parses. Like pch.hpp it holds nothing of the project's own.
#pragma once
#include "pch.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
