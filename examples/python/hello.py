"""A small program of the kind a model writes: it computes, prints, and
writes a declared output."""
import os
import platform
import sys

primes = [n for n in range(2, 60) if all(n % d for d in range(2, int(n ** 0.5) + 1))]
print(f"hello from python {platform.python_version()} as uid {os.getuid()}")
print("primes below 60:", primes)
print("args:", sys.argv[1:])
out = os.path.join("..", "output", "primes.txt")
if os.path.isdir(os.path.dirname(out)):
    with open(out, "w") as f:
        f.write(" ".join(map(str, primes)) + "\n")
