"""An MPI rank (run by mpirun -n 4): work() rank+1 times. Prints its count."""
import os


def work():
    pass


rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
for _ in range(rank + 1):
    work()
# one write: mpirun interleaves the ranks' output at write boundaries
os.write(1, b"count work %d\n" % (rank + 1))
