#pragma once

#include "tessera/framework/dist_array.hpp"

// The sum of the Huber loss (quadratic within delta, linear beyond) of every element. Collective.
double huber_sum(const tessera::DistArray<double>& residuals, double delta);
