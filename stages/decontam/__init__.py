"""Benchmark decontamination: documents that share normalised n-grams with a benchmark's test items.

normalise.py turns text into tokens (words, or code tokens), benchmarks.py reads the test items a
recipe names, index.py holds their n-gram hashes and finds them in a document, stage.py is the stage.
"""
