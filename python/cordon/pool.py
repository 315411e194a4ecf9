"""The warm pool from Python: cordon.pool.fill / ls / drain on the calling
thread's default Cordon (Cordon.pool_fill and friends on a context of your
own). See Cordon.pool_fill for the request's keys."""
from . import _default


def fill(size, for_="run", ttl_ms=None, **request):
    """Top up the pool of one run (for_="run") or provision target to size."""
    return _default().pool_fill(size, for_=for_, ttl_ms=ttl_ms, **request)


def ls():
    """{"pools": [...]}"""
    return _default().pool_ls()


def drain():
    """Destroy every unclaimed pooled execution."""
    return _default().pool_drain()
