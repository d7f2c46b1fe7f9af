"""Source files for the code samples, written for refinery: three small repositories in one tarball
(with the files code filters must reject) and a dozen rows in The Stack (v1) shape."""
from __future__ import annotations

import hashlib
import random

MIT = """MIT License

Copyright (c) {year} {holder}

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

APACHE = """
                                 Apache License
                           Version 2.0, January 2004
                        http://www.apache.org/licenses/

   TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION

   1. Definitions.

      "License" shall mean the terms and conditions for use, reproduction,
      and distribution as defined by Sections 1 through 9 of this document.

      "Licensor" shall mean the copyright owner or entity authorized by
      the copyright owner that is granting the License.

   (The remaining sections of the Apache License 2.0 apply unchanged; see
   http://www.apache.org/licenses/LICENSE-2.0 for the full text.)

   Copyright {year} {holder}

   Licensed under the Apache License, Version 2.0 (the "License");
   you may not use this file except in compliance with the License.
   You may obtain a copy of the License at

       http://www.apache.org/licenses/LICENSE-2.0

   Unless required by applicable law or agreed to in writing, software
   distributed under the License is distributed on an "AS IS" BASIS,
   WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
   See the License for the specific language governing permissions and
   limitations under the License.
"""

# ------------------------------------------------------------------------------------------------
# Repository 1: tinykv (Go, shell, YAML) -- MIT
# ------------------------------------------------------------------------------------------------
TINYKV = {
    "README.md": """# tinykv

A small in-memory key-value store with an HTTP interface, written to teach how
write-ahead logs work.

## Usage

```sh
./scripts/build.sh
./bin/tinykv -addr :8080 -wal data/wal.log
curl -X PUT localhost:8080/kv/greeting -d 'hello'
curl localhost:8080/kv/greeting
```

Every write is appended to the log before it is applied, so the store can be
rebuilt after a crash by replaying the log from the start.
""",
    "go.mod": """module github.com/example/tinykv

go 1.21

require github.com/pkg/errors v0.9.1
""",
    "main.go": """package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"strings"

	"github.com/example/tinykv/store"
)

func main() {
	addr := flag.String("addr", ":8080", "listen address")
	walPath := flag.String("wal", "wal.log", "write-ahead log file")
	flag.Parse()

	s, err := store.Open(*walPath)
	if err != nil {
		log.Fatalf("open store: %v", err)
	}
	defer s.Close()

	http.HandleFunc("/kv/", func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/kv/")
		switch r.Method {
		case http.MethodGet:
			v, ok := s.Get(key)
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Write([]byte(v))
		case http.MethodPut:
			buf := new(strings.Builder)
			if _, err := io.Copy(buf, r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if err := s.Put(key, buf.String()); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
	log.Printf("listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
""",
    "store/store.go": """// Package store keeps string keys and values in memory and logs every write.
package store

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
)

// Store is safe for concurrent use.
type Store struct {
	mu   sync.RWMutex
	data map[string]string
	wal  *os.File
}

// Open replays the log at path (if any) and opens it for appending.
func Open(path string) (*Store, error) {
	s := &Store{data: make(map[string]string)}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), "\\t")
			if ok {
				s.data[k] = v
			}
		}
		f.Close()
	}
	wal, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open wal: %w", err)
	}
	s.wal = wal
	return s, nil
}

// Get returns the value stored under key.
func (s *Store) Get(key string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.data[key]
	return v, ok
}

// Put logs the write, syncs the log, then applies it.
func (s *Store) Put(key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.wal, "%s\\t%s\\n", key, value); err != nil {
		return err
	}
	if err := s.wal.Sync(); err != nil {
		return err
	}
	s.data[key] = value
	return nil
}

// Close closes the log file.
func (s *Store) Close() error { return s.wal.Close() }
""",
    "store/store_test.go": """package store

import (
	"path/filepath"
	"testing"
)

func TestReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.log")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put("a", "1"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if v, ok := s2.Get("a"); !ok || v != "1" {
		t.Fatalf("after replay got %q, %v", v, ok)
	}
}
""",
    "scripts/build.sh": """#!/usr/bin/env bash
# Build the tinykv binary into ./bin with the version from git.
set -euo pipefail

cd "$(dirname "$0")/.."
version="$(git describe --tags --always 2>/dev/null || echo dev)"
mkdir -p bin
go build -ldflags "-X main.version=${version}" -o bin/tinykv .
echo "built bin/tinykv ${version}"
""",
    ".github/workflows/ci.yml": """name: ci
on:
  push:
    branches: [main]
  pull_request:

jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-go@v5
        with:
          go-version: "1.21"
      - run: go vet ./...
      - run: go test -race ./...
""",
    "api/types_gen.go": """// Code generated by protoc-gen-go. DO NOT EDIT.
// versions:
// 	protoc-gen-go v1.31.0
// 	protoc        v4.24.4
// source: api/types.proto

package api

type PutRequest struct {
	Key   string `protobuf:"bytes,1,opt,name=key,proto3" json:"key,omitempty"`
	Value string `protobuf:"bytes,2,opt,name=value,proto3" json:"value,omitempty"`
}

func (x *PutRequest) GetKey() string {
	if x != nil {
		return x.Key
	}
	return ""
}

func (x *PutRequest) GetValue() string {
	if x != nil {
		return x.Value
	}
	return ""
}
""",
    "vendor/github.com/pkg/errors/errors.go": """// Package errors provides simple error handling primitives (vendored copy).
package errors

import "fmt"

type fundamental struct {
	msg string
}

func (f *fundamental) Error() string { return f.msg }

// New returns an error with the supplied message.
func New(message string) error {
	return &fundamental{msg: message}
}

// Errorf formats according to a format specifier and returns the string as an error.
func Errorf(format string, args ...interface{}) error {
	return &fundamental{msg: fmt.Sprintf(format, args...)}
}
""",
    "vendor/modules.txt": """# github.com/pkg/errors v0.9.1
## explicit
github.com/pkg/errors
""",
}

# ------------------------------------------------------------------------------------------------
# Repository 2: webnotes (JavaScript, Python) -- Apache-2.0
# ------------------------------------------------------------------------------------------------
WEBNOTES = {
    "README.md": """# webnotes

A minimal note-taking web app: a Flask backend that stores notes in SQLite and a
small vanilla JavaScript frontend.

## Development

```sh
pip install -r server/requirements.txt
FLASK_APP=server/app.py flask run
npm install && npm run build
```

Notes are plain text; the frontend renders line breaks and links, nothing else.
""",
    "package.json": """{
  "name": "webnotes",
  "version": "0.3.1",
  "private": true,
  "scripts": {
    "build": "esbuild src/index.js --bundle --minify --outfile=dist/app.min.js",
    "test": "node --test src/"
  },
  "devDependencies": {
    "esbuild": "^0.19.8"
  },
  "dependencies": {
    "left-pad": "^1.3.0"
  }
}
""",
    "src/notes.js": """// Client for the notes API.
const BASE = '/api/notes';

export async function listNotes() {
  const res = await fetch(BASE);
  if (!res.ok) throw new Error(`list failed: ${res.status}`);
  return res.json();
}

export async function saveNote(text) {
  const res = await fetch(BASE, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  if (!res.ok) throw new Error(`save failed: ${res.status}`);
  return res.json();
}

// Escape HTML, then turn URLs into links and newlines into <br>.
export function renderNote(text) {
  const escaped = text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
  return escaped
    .replace(/https?:\\/\\/[^\\s]+/g, (url) => `<a href="${url}">${url}</a>`)
    .replace(/\\n/g, '<br>');
}
""",
    "src/index.js": """import { listNotes, saveNote, renderNote } from './notes.js';

const list = document.querySelector('#notes');
const form = document.querySelector('#new-note');

async function refresh() {
  const notes = await listNotes();
  list.innerHTML = notes
    .map((n) => `<li data-id="${n.id}">${renderNote(n.text)}</li>`)
    .join('');
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const text = form.elements.text.value.trim();
  if (!text) return;
  await saveNote(text);
  form.reset();
  await refresh();
});

refresh().catch((err) => console.error(err));
""",
    "server/app.py": '''"""Flask backend for webnotes: a JSON API over a single SQLite table."""
import sqlite3
from pathlib import Path

from flask import Flask, g, jsonify, request

DB_PATH = Path(__file__).with_name("notes.db")
app = Flask(__name__)


def db() -> sqlite3.Connection:
    if "db" not in g:
        g.db = sqlite3.connect(DB_PATH)
        g.db.row_factory = sqlite3.Row
        g.db.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    return g.db


@app.teardown_appcontext
def close_db(exc):
    conn = g.pop("db", None)
    if conn is not None:
        conn.close()


@app.get("/api/notes")
def list_notes():
    rows = db().execute("SELECT id, text FROM notes ORDER BY id DESC").fetchall()
    return jsonify([dict(r) for r in rows])


@app.post("/api/notes")
def create_note():
    text = (request.get_json(silent=True) or {}).get("text", "").strip()
    if not text:
        return jsonify(error="text is required"), 400
    cur = db().execute("INSERT INTO notes (text) VALUES (?)", (text,))
    db().commit()
    return jsonify(id=cur.lastrowid, text=text), 201
''',
    "server/test_app.py": '''import pytest

import app as webnotes


@pytest.fixture()
def client(tmp_path, monkeypatch):
    monkeypatch.setattr(webnotes, "DB_PATH", tmp_path / "notes.db")
    return webnotes.app.test_client()


def test_create_and_list(client):
    assert client.post("/api/notes", json={"text": "buy milk"}).status_code == 201
    notes = client.get("/api/notes").get_json()
    assert [n["text"] for n in notes] == ["buy milk"]


def test_empty_note_rejected(client):
    assert client.post("/api/notes", json={"text": "  "}).status_code == 400
''',
    "server/requirements.txt": "flask>=3.0\npytest>=8.0\n",
    "node_modules/left-pad/index.js": """'use strict';
module.exports = leftPad;

function leftPad(str, len, ch) {
  str = str + '';
  len = len - str.length;
  if (len <= 0) return str;
  if (!ch && ch !== 0) ch = ' ';
  ch = ch + '';
  var pad = '';
  while (len > 0) {
    if (len & 1) pad += ch;
    len >>= 1;
    ch += ch;
  }
  return pad + str;
}
""",
    "node_modules/left-pad/package.json": """{
  "name": "left-pad",
  "version": "1.3.0",
  "main": "index.js",
  "license": "WTFPL"
}
""",
}


def package_lock() -> str:
    entries = []
    for name, ver in [("left-pad", "1.3.0"), ("esbuild", "0.19.8"), ("@esbuild/linux-x64", "0.19.8")]:
        integrity = hashlib.sha512(f"{name}@{ver}".encode()).hexdigest()[:86]
        entries.append(f'''    "node_modules/{name}": {{
      "version": "{ver}",
      "resolved": "https://registry.npmjs.org/{name}/-/{name.split("/")[-1]}-{ver}.tgz",
      "integrity": "sha512-{integrity}==",
      "dev": {str(name != "left-pad").lower()}
    }}''')
    return ('{\n  "name": "webnotes",\n  "version": "0.3.1",\n  "lockfileVersion": 3,\n  "requires": true,\n'
            '  "packages": {\n    "": {\n      "name": "webnotes",\n      "version": "0.3.1"\n    },\n'
            + ",\n".join(entries) + "\n  }\n}\n")


def minified_js() -> str:
    """What esbuild --minify produces: the whole bundle on one very long line."""
    parts = ['(()=>{var a="/api/notes";async function l(){let t=await fetch(a);if(!t.ok)throw new Error(`list failed: ${t.status}`);return t.json()}']
    parts.append('async function s(t){let e=await fetch(a,{method:"POST",headers:{"Content-Type":"application/json"},body:JSON.stringify({text:t})});if(!e.ok)throw new Error(`save failed: ${e.status}`);return e.json()}')
    parts.append('function r(t){return t.replace(/&/g,"&amp;").replace(/</g,"&lt;").replace(/>/g,"&gt;").replace(/https?:\\/\\/[^\\s]+/g,e=>`<a href="${e}">${e}</a>`).replace(/\\n/g,"<br>")}')
    for i in range(40):
        parts.append(f'var u{i}=function(t,e){{return t.length>e?t.slice(0,e)+"\\u2026":t.padEnd(e," ")}};')
    parts.append('var n=document.querySelector("#notes"),o=document.querySelector("#new-note");async function c(){let t=await l();n.innerHTML=t.map(e=>`<li data-id="${e.id}">${r(e.text)}</li>`).join("")}o.addEventListener("submit",async t=>{t.preventDefault();let e=o.elements.text.value.trim();e&&(await s(e),o.reset(),await c())});c().catch(t=>console.error(t));})();')
    return "".join(parts) + "\n//# sourceMappingURL=app.min.js.map\n"


# ------------------------------------------------------------------------------------------------
# Repository 3: rsgeom (Rust, C, Java) -- MIT
# ------------------------------------------------------------------------------------------------
RSGEOM = {
    "README.md": """# rsgeom

Tiny 2D geometry helpers in Rust, with a C ABI so they can be called from C and
Java (through JNA).

* `Point` and `Segment` types
* segment intersection that is exact for integer coordinates
* polygon area with the shoelace formula

Build with `cargo build --release`; the C header is in `ffi/geom.h`.
""",
    "Cargo.toml": """[package]
name = "rsgeom"
version = "0.2.0"
edition = "2021"
license = "MIT"

[lib]
crate-type = ["rlib", "cdylib"]

[dependencies]
""",
    "src/lib.rs": """//! Small 2D geometry helpers with a C ABI.

pub mod point;

pub use point::Point;

/// Twice the signed area of the polygon (positive when counter-clockwise).
pub fn doubled_area(poly: &[Point]) -> i64 {
    let n = poly.len();
    (0..n)
        .map(|i| {
            let (a, b) = (poly[i], poly[(i + 1) % n]);
            a.x * b.y - b.x * a.y
        })
        .sum()
}

/// Whether segments `p1p2` and `q1q2` intersect (touching counts).
pub fn segments_intersect(p1: Point, p2: Point, q1: Point, q2: Point) -> bool {
    let d1 = point::orient(q1, q2, p1);
    let d2 = point::orient(q1, q2, p2);
    let d3 = point::orient(p1, p2, q1);
    let d4 = point::orient(p1, p2, q2);
    if d1 * d2 < 0 && d3 * d4 < 0 {
        return true;
    }
    (d1 == 0 && point::on_segment(q1, q2, p1))
        || (d2 == 0 && point::on_segment(q1, q2, p2))
        || (d3 == 0 && point::on_segment(p1, p2, q1))
        || (d4 == 0 && point::on_segment(p1, p2, q2))
}

#[no_mangle]
pub extern "C" fn geom_doubled_area(xs: *const i64, ys: *const i64, n: usize) -> i64 {
    let (xs, ys) = unsafe { (std::slice::from_raw_parts(xs, n), std::slice::from_raw_parts(ys, n)) };
    let poly: Vec<Point> = xs.iter().zip(ys).map(|(&x, &y)| Point { x, y }).collect();
    doubled_area(&poly)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_square() {
        let sq = [Point { x: 0, y: 0 }, Point { x: 1, y: 0 }, Point { x: 1, y: 1 }, Point { x: 0, y: 1 }];
        assert_eq!(doubled_area(&sq), 2);
    }
}
""",
    "src/point.rs": """/// A point with integer coordinates, so orientation tests are exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Point {
    pub x: i64,
    pub y: i64,
}

/// Sign of the cross product (b - a) x (c - a): >0 left turn, <0 right turn, 0 collinear.
pub fn orient(a: Point, b: Point, c: Point) -> i64 {
    ((b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)).signum()
}

/// Whether `c`, known to be collinear with `a` and `b`, lies within their bounding box.
pub fn on_segment(a: Point, b: Point, c: Point) -> bool {
    a.x.min(b.x) <= c.x && c.x <= a.x.max(b.x) && a.y.min(b.y) <= c.y && c.y <= a.y.max(b.y)
}
""",
    "ffi/geom.h": """#ifndef RSGEOM_H
#define RSGEOM_H

#include <stddef.h>
#include <stdint.h>

/* Twice the signed area of the polygon given by n vertices (xs[i], ys[i]). */
int64_t geom_doubled_area(const int64_t *xs, const int64_t *ys, size_t n);

#endif /* RSGEOM_H */
""",
    "ffi/example.c": """#include <stdio.h>
#include "geom.h"

/* Prints the area of a right triangle with legs 3 and 4 using the Rust library. */
int main(void) {
    const int64_t xs[] = {0, 3, 0};
    const int64_t ys[] = {0, 0, 4};
    int64_t twice = geom_doubled_area(xs, ys, 3);
    printf("area = %lld.%s\\n", (long long)(twice / 2), twice % 2 ? "5" : "0");
    return twice == 12 ? 0 : 1;
}
""",
    "java/src/main/java/org/example/geom/Geom.java": """package org.example.geom;

import com.sun.jna.Library;
import com.sun.jna.Native;

/** Java binding for the rsgeom C ABI through JNA. */
public final class Geom {
    interface Lib extends Library {
        Lib INSTANCE = Native.load("rsgeom", Lib.class);

        long geom_doubled_area(long[] xs, long[] ys, long n);
    }

    private Geom() {}

    /** Area of the polygon with the given vertices. */
    public static double area(long[] xs, long[] ys) {
        if (xs.length != ys.length) {
            throw new IllegalArgumentException("xs and ys must have the same length");
        }
        return Math.abs(Lib.INSTANCE.geom_doubled_area(xs, ys, xs.length)) / 2.0;
    }

    public static void main(String[] args) {
        System.out.println(area(new long[] {0, 3, 0}, new long[] {0, 0, 4}));
    }
}
""",
}


def cargo_lock() -> str:
    return """# This file is automatically @generated by Cargo.
# It is not intended for manual editing.
version = 3

[[package]]
name = "rsgeom"
version = "0.2.0"
"""


def long_line_table() -> str:
    """A Rust lookup table on a few very long lines: huge mean line length."""
    rng = random.Random(7)
    rows = [", ".join(str(rng.randint(0, 65535)) for _ in range(700)) for _ in range(3)]
    return ("// Precomputed sine table, scaled to u16.\n"
            + "".join(f"pub const SINE_{i}: [u16; 700] = [{r}];\n" for i, r in enumerate(rows)))


def grid_data() -> str:
    """A board-state data file made of punctuation: low alphanumeric fraction."""
    lines = []
    for r in range(24):
        lines.append("+" + "---+" * 16)
        lines.append("|" + "|".join(" # " if (r * 7 + c * 3) % 5 == 0 else " . " for c in range(16)) + "|")
    lines.append("+" + "---+" * 16)
    return "\n".join(lines) + "\n"


def compiled_blob() -> bytes:
    """An ELF-looking shared object: magic, NUL padding and pseudo-random code bytes."""
    rng = random.Random(11)
    return b"\x7fELF\x02\x01\x01" + b"\x00" * 57 + bytes(rng.getrandbits(8) for _ in range(2048))


def png_logo() -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes((x * 16 + y * 4) % 256 for x in range(16) for _ in range(3)) for y in range(16))
    ihdr = struct.pack(">IIBBBBB", 16, 16, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


KEEP = "keep"


def repo_members() -> tuple[list[tuple[str, bytes]], list[dict]]:
    """(tar members, manifest rows). Members are sorted within each repository."""
    repos = [
        ("tinykv", MIT.format(year=2023, holder="The tinykv authors"), dict(TINYKV), "MIT"),
        ("webnotes", APACHE.format(year=2024, holder="Webnotes contributors"), dict(WEBNOTES), "Apache-2.0"),
        ("rsgeom", MIT.format(year=2022, holder="Ines Duarte"), dict(RSGEOM), "MIT"),
    ]
    repos[1][2]["package-lock.json"] = package_lock()
    repos[1][2]["dist/app.min.js"] = minified_js()
    repos[1][2]["assets/logo.png"] = png_logo()
    repos[2][2]["Cargo.lock"] = cargo_lock()
    repos[2][2]["src/sine_table.rs"] = long_line_table()
    repos[2][2]["data/board.txt"] = grid_data()
    repos[2][2]["build/librsgeom.so"] = compiled_blob()

    reject = {
        "vendor/": "code: vendored dependency", "node_modules/": "code: vendored dependency",
        "package-lock.json": "code: lock file", "Cargo.lock": "code: lock file",
        "dist/app.min.js": "code: minified (max line length)", "api/types_gen.go": "code: auto-generated",
        "assets/logo.png": "code: binary", "build/librsgeom.so": "code: binary",
        "src/sine_table.rs": "code: mean line length", "data/board.txt": "code: low alphanumeric fraction",
    }
    members, rows = [], []
    for name, license_text, files, spdx in repos:
        files["LICENSE"] = license_text
        for path in sorted(files):
            data = files[path]
            data = data.encode("utf-8") if isinstance(data, str) else data
            members.append((f"{name}/{path}", data))
            why = next((v for k, v in reject.items() if path == k or path.startswith(k)), KEEP)
            if path in ("LICENSE",):
                why = "read: not_code (license text; its licence is recorded on the repo's files)"
            rows.append({"file": "code/repos.tar.gz", "member": f"{name}/{path}", "repo": name,
                         "license": spdx, "expect": why})
    return members, rows


# ------------------------------------------------------------------------------------------------
# The Stack (v1) rows
# ------------------------------------------------------------------------------------------------
STACK_EXTRA = [
    ("Python", "py", "mlutils/metrics.py", "kfisher/mlutils", ["BSD-3-Clause"], '''"""Classification metrics that work on plain Python lists."""
from collections import Counter


def confusion(y_true, y_pred):
    """Counts of (true, predicted) label pairs."""
    return Counter(zip(y_true, y_pred))


def precision_recall(y_true, y_pred, positive=1):
    c = confusion(y_true, y_pred)
    tp = c[(positive, positive)]
    fp = sum(v for (t, p), v in c.items() if p == positive and t != positive)
    fn = sum(v for (t, p), v in c.items() if t == positive and p != positive)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return precision, recall


def f1(y_true, y_pred, positive=1):
    p, r = precision_recall(y_true, y_pred, positive)
    return 2 * p * r / (p + r) if p + r else 0.0
'''),
    ("Python", "py", "scripts/rename_photos.py", "tomaszk/home-scripts", ["MIT"], '''#!/usr/bin/env python3
"""Rename photos to their capture date (YYYY-MM-DD_HHMMSS.jpg) using the file's mtime."""
import sys
from datetime import datetime
from pathlib import Path


def main(folder: str) -> None:
    for path in sorted(Path(folder).glob("*.jpg")):
        stamp = datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y-%m-%d_%H%M%S")
        target = path.with_name(f"{stamp}.jpg")
        n = 1
        while target.exists():
            target = path.with_name(f"{stamp}_{n}.jpg")
            n += 1
        path.rename(target)
        print(f"{path.name} -> {target.name}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
'''),
    ("C", "c", "src/ringbuf.c", "embedded-lab/ringbuf", ["MIT"], '''#include "ringbuf.h"

/* A single-producer, single-consumer ring buffer; capacity must be a power of two. */
void rb_init(ringbuf_t *rb, uint8_t *storage, size_t capacity) {
    rb->buf = storage;
    rb->mask = capacity - 1;
    rb->head = rb->tail = 0;
}

int rb_put(ringbuf_t *rb, uint8_t byte) {
    if (rb->head - rb->tail > rb->mask) {
        return -1; /* full */
    }
    rb->buf[rb->head & rb->mask] = byte;
    rb->head++;
    return 0;
}

int rb_get(ringbuf_t *rb, uint8_t *out) {
    if (rb->head == rb->tail) {
        return -1; /* empty */
    }
    *out = rb->buf[rb->tail & rb->mask];
    rb->tail++;
    return 0;
}
'''),
    ("Java", "java", "src/main/java/com/example/Fizz.java", "jdoe/katas", ["Apache-2.0"], '''package com.example;

import java.util.ArrayList;
import java.util.List;

/** The FizzBuzz kata, written to practise test-driven development. */
public final class Fizz {
    private Fizz() {}

    public static String say(int n) {
        if (n % 15 == 0) return "FizzBuzz";
        if (n % 3 == 0) return "Fizz";
        if (n % 5 == 0) return "Buzz";
        return Integer.toString(n);
    }

    public static List<String> upTo(int limit) {
        List<String> out = new ArrayList<>();
        for (int i = 1; i <= limit; i++) {
            out.add(say(i));
        }
        return out;
    }
}
'''),
    ("Shell", "sh", "bin/backup.sh", "ops-team/dotfiles", ["MIT"], '''#!/bin/sh
# Back up the home directory to an external disk, keeping seven daily snapshots.
set -eu

DEST="/mnt/backup/$(hostname)"
TODAY="$(date +%F)"
mkdir -p "$DEST"

LATEST="$DEST/latest"
rsync -a --delete --link-dest="$LATEST" "$HOME/" "$DEST/$TODAY/"
ln -sfn "$DEST/$TODAY" "$LATEST"

# keep the newest seven snapshots
ls -1d "$DEST"/20* | sort | head -n -7 | xargs -r rm -rf
'''),
    ("YAML", "yml", "docker-compose.yml", "smallshop/infra", ["MIT"], '''version: "3.9"
services:
  db:
    image: postgres:16
    environment:
      POSTGRES_DB: shop
      POSTGRES_USER: shop
      POSTGRES_PASSWORD_FILE: /run/secrets/db_password
    volumes:
      - db-data:/var/lib/postgresql/data
    secrets:
      - db_password
  web:
    build: .
    ports:
      - "8000:8000"
    depends_on:
      - db
volumes:
  db-data:
secrets:
  db_password:
    file: ./secrets/db_password.txt
'''),
]


def _stack_row(lang: str, ext: str, path: str, repo: str, licenses: list[str], content: str, stars: int) -> dict:
    lines = content.splitlines() or [""]
    alnum = sum(c.isalnum() for c in content) / max(1, len(content))
    return {
        "hexsha": hashlib.sha1(f"blob {len(content.encode())}\0".encode() + content.encode()).hexdigest(),
        "size": len(content.encode("utf-8")),
        "ext": ext,
        "lang": lang,
        "max_stars_repo_path": path,
        "max_stars_repo_name": repo,
        "max_stars_repo_head_hexsha": hashlib.sha1(repo.encode()).hexdigest(),
        "max_stars_repo_licenses": licenses,
        "max_stars_count": stars,
        "content": content,
        "avg_line_length": round(sum(map(len, lines)) / len(lines), 6),
        "max_line_length": max(map(len, lines)),
        "alphanum_fraction": round(alnum, 6),
    }


def stack_rows() -> tuple[list[dict], list[dict]]:
    """Rows in The Stack v1 column layout, and manifest rows saying what should happen to each."""
    specs = [(*s, "keep") for s in STACK_EXTRA]
    specs += [
        ("Go", "go", "store/store.go", "example/tinykv", ["MIT"], TINYKV["store/store.go"], "keep"),
        ("Rust", "rs", "src/point.rs", "idarte/rsgeom", ["MIT"], RSGEOM["src/point.rs"], "keep"),
        ("JavaScript", "js", "src/notes.js", "webnotes-dev/webnotes", ["Apache-2.0"], WEBNOTES["src/notes.js"], "keep"),
        # exact duplicate of the row above under another repository (forks are common in The Stack)
        ("JavaScript", "js", "client/notes.js", "someone-else/webnotes-fork", ["Apache-2.0"], WEBNOTES["src/notes.js"],
         "dedup_exact: duplicate"),
        ("JavaScript", "js", "dist/app.min.js", "webnotes-dev/webnotes", ["Apache-2.0"], minified_js(),
         "code: minified (max line length)"),
        ("Go", "go", "api/types_gen.go", "example/tinykv", ["MIT"], TINYKV["api/types_gen.go"], "code: auto-generated"),
        ("Text", "txt", "data/board.txt", "idarte/rsgeom", ["MIT"], grid_data(), "code: low alphanumeric fraction"),
        ("Rust", "rs", "src/sine_table.rs", "idarte/rsgeom", ["MIT"], long_line_table(), "code: mean line length"),
    ]
    rows, manifest = [], []
    for i, (lang, ext, path, repo, lic, content, expect) in enumerate(specs):
        rows.append(_stack_row(lang, ext, path, repo, lic, content, stars=(i * 37) % 500))
        manifest.append({"file": "code/stack-0000.jsonl.gz", "line": i + 1, "repo": repo, "path": path,
                         "lang": lang, "expect": expect})
    return rows, manifest
