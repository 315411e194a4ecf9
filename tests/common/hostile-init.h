/* Test helper shared by the runc, docker and gVisor suites: code inside a
 * sandbox that goes for its PID 1 (the init, the agent) through resource
 * limits and signals rather than through its descriptors
 * (hostile-agent.h). Shell only, with util-linux's prlimit and procps'
 * kill, which the minimal and toolchain test images both have. */
#ifndef CORDON_TEST_COMMON_HOSTILE_INIT_H
#define CORDON_TEST_COMMON_HOSTILE_INIT_H

/*
 * End the sandbox early. With PID 1's RLIMIT_SIGPENDING at 0, a signal
 * sent with a negative si_code (sigqueue, tgkill) cannot be queued with
 * its siginfo; a stop signal then arrives without it, as si_code SI_USER
 * and si_pid 0: what kill(2) from an ancestor pid namespace looks like.
 * An init that takes that as "stop from outside" ends the sandbox. The
 * script prints "SET sigpending" if the limit could be changed, and
 * "alive" if it is still running a second later.
 */
#define TEST_HOSTILE_INIT_STOP                                                            \
    "prlimit --pid 1 --sigpending=0:0 2>/dev/null && echo 'SET sigpending'; "             \
    "/usr/bin/kill -q 0 -s TERM 1; /usr/bin/kill -q 0 -s HUP 1; /usr/bin/kill -s INT 1; " \
    "sleep 1; echo alive"

/*
 * Starve the agent: with PID 1's RLIMIT_NOFILE at 4 it cannot receive the
 * descriptors of the next request. Prints "SET nofile" if the limit could
 * be changed, then "done".
 */
#define TEST_HOSTILE_INIT_NOFILE \
    "prlimit --pid 1 --nofile=4:4 2>/dev/null && echo 'SET nofile'; echo done"

#endif
