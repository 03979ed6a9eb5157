from tests.support.github import github_emulator  # noqa: F401  (fixture)
from tests.support.prometheus import sim_cluster, sim_prometheus  # noqa: F401  (fixtures)
