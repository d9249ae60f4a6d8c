#include "lemma/dist/parallel_config.h"

namespace lemma::dist {

void validate(const ParallelConfig& config, int world_size) {
  const std::pair<const char*, int> sizes[] = {{"tensor", config.tp}, {"pipeline", config.pp},
                                               {"expert", config.ep}, {"data", config.dp}};
  long long product = 1;
  for (const auto& [what, n] : sizes) {
    if (n < 1) fail<InvalidArgument>("dist: {}-parallel size {} must be >= 1", what, n);
    product *= n;
  }
  if (product != world_size) {
    fail<InvalidArgument>("dist: tensor x pipeline x expert x data parallel sizes {} x {} x {} x {} = {} ranks, "
                          "but the world has {} (mpirun -np)",
                          config.tp, config.pp, config.ep, config.dp, product, world_size);
  }
}

ParallelCoordinates coordinates_of(const ParallelConfig& config, int world_rank) {
  ParallelCoordinates c;
  c.tp = world_rank % config.tp;
  world_rank /= config.tp;
  c.ep = world_rank % config.ep;
  world_rank /= config.ep;
  c.dp = world_rank % config.dp;
  c.pp = world_rank / config.dp;
  return c;
}

ProcessGroups make_process_groups(Communicator& world, const ParallelConfig& config) {
  validate(config, world.size());
  const ParallelCoordinates c = coordinates_of(config, world.rank());
  // The color is everything but the group's own coordinate; the key is that coordinate.
  auto color = [&](ParallelCoordinates without) {
    return ((without.pp * config.dp + without.dp) * config.ep + without.ep) * config.tp + without.tp;
  };
  ProcessGroups groups;
  groups.tp = world.split(color({0, c.pp, c.ep, c.dp}), c.tp, "tp");
  groups.pp = world.split(color({c.tp, 0, c.ep, c.dp}), c.pp, "pp");
  groups.ep = world.split(color({c.tp, c.pp, 0, c.dp}), c.ep, "ep");
  groups.dp = world.split(color({c.tp, c.pp, c.ep, 0}), c.dp, "dp");
  return groups;
}

}  // namespace lemma::dist
