"""Programming language of a file from its name and extension (The Stack's naming).

Used by the code reader; unknown files are not code and are rejected there, the way The Stack
keeps only files of known languages.
"""
from __future__ import annotations

import posixpath

EXTENSIONS: dict[str, str] = {
    # systems
    "c": "C", "h": "C", "cc": "C++", "cpp": "C++", "cxx": "C++", "c++": "C++", "hpp": "C++",
    "hh": "C++", "hxx": "C++", "ipp": "C++", "cu": "CUDA", "cuh": "CUDA", "rs": "Rust", "go": "Go",
    "zig": "Zig", "d": "D", "m": "Objective-C", "mm": "Objective-C++", "swift": "Swift",
    "asm": "Assembly", "s": "Assembly", "nim": "Nim", "v": "Verilog", "sv": "SystemVerilog",
    "vhd": "VHDL", "vhdl": "VHDL", "f": "Fortran", "f90": "Fortran", "f95": "Fortran", "f03": "Fortran",
    "for": "Fortran", "pas": "Pascal", "ada": "Ada", "adb": "Ada", "ads": "Ada", "cob": "COBOL",
    # JVM / .NET
    "java": "Java", "kt": "Kotlin", "kts": "Kotlin", "scala": "Scala", "sc": "Scala", "groovy": "Groovy",
    "gradle": "Groovy", "clj": "Clojure", "cljs": "Clojure", "cljc": "Clojure", "cs": "C#", "fs": "F#",
    "fsx": "F#", "vb": "Visual Basic",
    # scripting
    "py": "Python", "pyi": "Python", "pyx": "Cython", "pxd": "Cython", "ipynb": "Jupyter Notebook",
    "rb": "Ruby", "php": "PHP", "pl": "Perl", "pm": "Perl", "lua": "Lua", "r": "R", "jl": "Julia",
    "sh": "Shell", "bash": "Shell", "zsh": "Shell", "fish": "Shell", "ps1": "PowerShell",
    "psm1": "PowerShell", "bat": "Batchfile", "cmd": "Batchfile", "tcl": "Tcl", "awk": "Awk",
    "el": "Emacs Lisp", "lisp": "Common Lisp", "cl": "Common Lisp", "scm": "Scheme", "rkt": "Racket",
    "hs": "Haskell", "lhs": "Haskell", "ml": "OCaml", "mli": "OCaml", "erl": "Erlang", "hrl": "Erlang",
    "ex": "Elixir", "exs": "Elixir", "dart": "Dart", "elm": "Elm", "purs": "PureScript",
    "coffee": "CoffeeScript", "vim": "Vim Script", "matlab": "MATLAB", "sas": "SAS", "pro": "Prolog",
    "sol": "Solidity", "cr": "Crystal", "raku": "Raku", "ada95": "Ada",
    # web
    "js": "JavaScript", "mjs": "JavaScript", "cjs": "JavaScript", "jsx": "JavaScript",
    "ts": "TypeScript", "tsx": "TypeScript", "mts": "TypeScript", "html": "HTML", "htm": "HTML",
    "css": "CSS", "scss": "SCSS", "sass": "Sass", "less": "Less", "vue": "Vue", "svelte": "Svelte",
    # data / config / docs / query
    "sql": "SQL", "json": "JSON", "yaml": "YAML", "yml": "YAML", "toml": "TOML", "xml": "XML",
    "ini": "INI", "cfg": "INI", "proto": "Protocol Buffer", "graphql": "GraphQL", "gql": "GraphQL",
    "md": "Markdown", "markdown": "Markdown", "rst": "reStructuredText", "tex": "TeX", "sty": "TeX",
    "cmake": "CMake", "mk": "Makefile", "dockerfile": "Dockerfile", "tf": "HCL", "hcl": "HCL",
    "nix": "Nix", "txt": "Text", "thrift": "Thrift", "smali": "Smali", "glsl": "GLSL", "hlsl": "HLSL",
}

FILENAMES: dict[str, str] = {
    "dockerfile": "Dockerfile", "containerfile": "Dockerfile", "makefile": "Makefile",
    "gnumakefile": "Makefile", "cmakelists.txt": "CMake", "gemfile": "Ruby", "rakefile": "Ruby",
    "podfile": "Ruby", "vagrantfile": "Ruby", "jenkinsfile": "Groovy", "build": "Starlark",
    "build.bazel": "Starlark", "workspace": "Starlark", "bazel": "Starlark", "sconstruct": "Python",
    "sconscript": "Python", "justfile": "Just", "procfile": "Procfile", ".bashrc": "Shell",
    ".zshrc": "Shell", ".profile": "Shell", "meson.build": "Meson", "kbuild": "Makefile",
    "go.mod": "Go Module", "requirements.txt": "Pip Requirements", "pipfile": "TOML",
}


def language_of(path: str) -> str | None:
    """'Python' for 'src/a.py', 'Dockerfile' for 'docker/Dockerfile.dev', None if not code."""
    name = posixpath.basename(path.replace("\\", "/")).lower()
    if name in FILENAMES:
        return FILENAMES[name]
    stem, dot, ext = name.rpartition(".")
    if dot and ext in EXTENSIONS and stem:
        return EXTENSIONS[ext]
    if name.startswith(("dockerfile.", "makefile.")):  # Dockerfile.dev, Makefile.am
        return FILENAMES[name.split(".", 1)[0]]
    return None
