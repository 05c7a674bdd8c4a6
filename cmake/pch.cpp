// The translation unit that compiles cmake/pch.hpp once for every library (REUSE_FROM).
