"""A chain of three Python processes started with subprocess; each level
calls step() level*10 times and reports the total of the levels below."""
import subprocess
import sys


def step():
    pass


def main(level):
    for _ in range(level * 10):
        step()
    below = 0
    if level < 3:
        out = subprocess.run([sys.executable, __file__, str(level + 1)],
                             capture_output=True, text=True, check=True).stdout
        below = int(out)
    return level * 10 + below


if __name__ == "__main__":
    level = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    total = main(level)
    if level == 1:
        print("count step", total)
    else:
        print(total)
