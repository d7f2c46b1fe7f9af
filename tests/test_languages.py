from pipeline.sources.languages import EXTENSIONS, language_of


def test_known_languages():
    cases = {"a.py": "Python", "b/c.rs": "Rust", "x.tsx": "TypeScript", "Dockerfile": "Dockerfile",
             "docker/Dockerfile.prod": "Dockerfile", "Makefile": "Makefile", "CMakeLists.txt": "CMake",
             "Gemfile": "Ruby", "k.kt": "Kotlin", "m.ipynb": "Jupyter Notebook", "s.SQL": "SQL",
             "h.hpp": "C++", "q.hs": "Haskell", "w.yml": "YAML", "BUILD.bazel": "Starlark"}
    for path, lang in cases.items():
        assert language_of(path) == lang, path


def test_unknown_and_dotfiles():
    assert language_of("data.csv") is None
    assert language_of("LICENSE") is None
    assert language_of(".py") is None  # a dotfile named like an extension is not Python


def test_at_least_30_languages():
    assert len(set(EXTENSIONS.values())) >= 30
