// Stands for an app/ header.
#pragma once
