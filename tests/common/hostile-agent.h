/* Test helper shared by the runc and docker suites: code inside a sandbox
 * that tries every way to the resident agent's channel. */
#ifndef CORDON_TEST_COMMON_HOSTILE_AGENT_H
#define CORDON_TEST_COMMON_HOSTILE_AGENT_H

/*
 * A C program for a sandbox with a compiler. It tries, and prints "REACHED
 * WHAT N" for each that works:
 * - an fd inherited above 2;
 * - /proc/1/fd/N, and pidfd_open(1) + pidfd_getfd for fds 0..255;
 * - ptrace of PID 1 (attach and seize), process_vm_readv of it;
 * - connect to every unix socket in /proc/net/unix (abstract names and
 *   paths), as stream, seqpacket and datagram;
 * - SIGTERM, SIGINT and SIGHUP to PID 1 (kill, tgkill, rt_sigqueueinfo
 *   forging si_pid 0, then a forged SI_USER, which must be refused), and
 *   kill -9 1.
 * It ends with "reached N" and exits non-zero when anything was reached or
 * when its control failed: first it opens an fd of its own (dumpable) child
 * through /proc ("control ok"), so that a refusal on PID 1 is the agent's
 * protection, not the technique's failure.
 */
static const char test_hostile_agent_c[] =
    "#define _GNU_SOURCE\n"
    "#include <errno.h>\n#include <fcntl.h>\n#include <signal.h>\n#include <stdio.h>\n"
    "#include <stddef.h>\n#include <string.h>\n#include <sys/ptrace.h>\n#include <sys/socket.h>\n"
    "#include <sys/syscall.h>\n#include <sys/uio.h>\n#include <sys/un.h>\n"
    "#include <sys/wait.h>\n#include <unistd.h>\n"
    "static int reached;\n"
    "static void hit(const char *what, long n) { printf(\"REACHED %s %ld\\n\", what, n); reached++; }\n"
    "int main(void) {\n"
    "    char path[128], line[512], buf[16];\n"
    "    int p[2], self = -1;\n"
    "    for (int i = 3; i < 1024; i++) if (fcntl(i, F_GETFD) >= 0) hit(\"inherited fd\", i);\n"
    "    /* control: our own child's fd is reachable */\n"
    "    if (pipe(p) == 0) {\n"
    "        pid_t c = fork();\n"
    "        if (c == 0) { pause(); _exit(0); }\n"
    "        snprintf(path, sizeof(path), \"/proc/%d/fd/%d\", (int)c, p[0]);\n"
    "        self = open(path, O_RDONLY);\n"
    "        printf(\"control %s\\n\", self >= 0 ? \"ok\" : strerror(errno));\n"
    "        kill(c, SIGKILL); waitpid(c, NULL, 0);\n"
    "    }\n"
    "    for (int i = 0; i < 256; i++) {\n"
    "        snprintf(path, sizeof(path), \"/proc/1/fd/%d\", i);\n"
    "        int fd = open(path, O_RDWR);\n"
    "        if (fd >= 0) hit(path, i);\n"
    "    }\n"
    "    int pf = (int)syscall(SYS_pidfd_open, 1, 0);\n"
    "    printf(\"pidfd_open(1): %d\\n\", pf);\n"
    "    for (int i = 0; pf >= 0 && i < 256; i++)\n"
    "        if (syscall(SYS_pidfd_getfd, pf, i, 0) >= 0) hit(\"pidfd_getfd\", i);\n"
    "    if (ptrace(PTRACE_ATTACH, 1, 0, 0) == 0) hit(\"ptrace attach\", 1);\n"
    "    if (ptrace(PTRACE_SEIZE, 1, 0, 0) == 0) hit(\"ptrace seize\", 1);\n"
    "    { struct iovec l = { buf, sizeof(buf) }, r = { (void *)0x400000, sizeof(buf) };\n"
    "      if (process_vm_readv(1, &l, 1, &r, 1, 0) >= 0) hit(\"process_vm_readv\", 1); }\n"
    "    FILE *f = fopen(\"/proc/net/unix\", \"r\");\n"
    "    int listed = 0;\n"
    "    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {\n"
    "        char name[300] = \"\";\n"
    "        if (sscanf(line, \"%*s %*s %*s %*s %*s %*s %*s %299s\", name) != 1) continue;\n"
    "        listed++;\n"
    "        struct sockaddr_un a = { .sun_family = AF_UNIX };\n"
    "        size_t n = strlen(name);\n"
    "        if (n >= sizeof(a.sun_path)) continue;\n"
    "        memcpy(a.sun_path, name, n);\n"
    "        if (name[0] == '@') a.sun_path[0] = '\\0';\n"
    "        int types[] = { SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM };\n"
    "        for (int t = 0; t < 3; t++) {\n"
    "            int s = socket(AF_UNIX, types[t], 0);\n"
    "            if (s >= 0 && connect(s, (struct sockaddr *)&a,\n"
    "                                  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) == 0)\n"
    "                hit(name, t);\n"
    "            if (s >= 0) close(s);\n"
    "        }\n"
    "    }\n"
    "    printf(\"named sockets listed: %d\\n\", listed);\n"
    "    /* the stop signals the agent takes, from inside: also forged */\n"
    "    kill(1, SIGTERM); kill(1, SIGINT); kill(1, SIGHUP);\n"
    "    syscall(SYS_tgkill, 1, 1, SIGTERM);\n"
    "    { siginfo_t q; memset(&q, 0, sizeof(q)); q.si_signo = SIGTERM; q.si_code = SI_QUEUE;\n"
    "      syscall(SYS_rt_sigqueueinfo, 1, SIGTERM, &q);\n"
    "      q.si_code = SI_USER;\n"
    "      if (syscall(SYS_rt_sigqueueinfo, 1, SIGTERM, &q) == 0) hit(\"forged SI_USER\", 1); }\n"
    "    kill(1, SIGKILL);\n"
    "    usleep(100000);\n"
    "    printf(\"reached %d\\n\", reached);\n"
    "    return reached != 0 || self < 0;\n"
    "}\n";

#endif
