from tests.support.github import github_emulator  # noqa: F401  (fixture)
