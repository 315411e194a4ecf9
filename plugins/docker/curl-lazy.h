/*
 * docker (internal): libcurl, loaded the first time the provider talks to
 * the daemon. An exec through the resident agent never does, and Debian's
 * libcurl pulls in some twenty libraries (TLS, LDAP, Kerberos, SSH, IDN):
 * loading and initialising them took 15 ms of a 29 ms `cordon exec` on the
 * 2-core reference machine.
 *
 * engine.c includes this header instead of curl/curl.h; every curl_* call
 * there then goes through the table below, and every entry point calls
 * dk__curl_load first. libcurl's compile-time option type checks are off
 * here (they are macros around the real functions, which a table entry
 * cannot be).
 */
#ifndef CORDON_DOCKER_CURL_LAZY_H
#define CORDON_DOCKER_CURL_LAZY_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <cordon/error.h>

/* Every libcurl function the provider calls. */
#define DK_CURL_FUNCS(X)                                                                     \
    X(curl_global_init) X(curl_easy_init) X(curl_easy_cleanup) X(curl_easy_reset)          \
    X(curl_easy_setopt) X(curl_easy_getinfo) X(curl_easy_perform) X(curl_easy_strerror)    \
    X(curl_easy_send) X(curl_easy_recv) X(curl_slist_append) X(curl_slist_free_all)

/* Pointers with the exact types curl.h declares. */
struct dk_curl_api {
#define DK_CURL_MEMBER(name) __typeof__(name) *name;
    DK_CURL_FUNCS(DK_CURL_MEMBER)
#undef DK_CURL_MEMBER
};

extern struct dk_curl_api dk__curl;

/* Load libcurl (by the soname configure recorded) and run its global init,
 * once per process (thread-safe). 0, or CORDON_E_UNAVAILABLE naming the
 * library and what dlopen said; a failed load is not retried. */
int dk__curl_load(struct cordon_error *err);

#ifndef DK_CURL_NO_REDIRECT
/* curl.h wraps these two in function-like macros of the same name. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init dk__curl.curl_global_init
#define curl_easy_init dk__curl.curl_easy_init
#define curl_easy_cleanup dk__curl.curl_easy_cleanup
#define curl_easy_reset dk__curl.curl_easy_reset
#define curl_easy_setopt dk__curl.curl_easy_setopt
#define curl_easy_getinfo dk__curl.curl_easy_getinfo
#define curl_easy_perform dk__curl.curl_easy_perform
#define curl_easy_strerror dk__curl.curl_easy_strerror
#define curl_easy_send dk__curl.curl_easy_send
#define curl_easy_recv dk__curl.curl_easy_recv
#define curl_slist_append dk__curl.curl_slist_append
#define curl_slist_free_all dk__curl.curl_slist_free_all
#endif

#endif
