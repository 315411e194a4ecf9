# Compiler and linker flags, probed rather than assumed: a flag one compiler
# lacks (gcc's -Wformat-truncation under clang) would otherwise fail every
# compile once --enable-werror makes its "unknown option" warning an error.

# CORDON_ADD_CFLAG(VARIABLE, FLAG, [PROBE-FLAG])
# -------------------------------------------
# Append FLAG to VARIABLE if $CC compiles a program with PROBE-FLAG (FLAG
# when not given) under -Werror. Probe -Wno-X through -WX: gcc accepts any
# -Wno-X silently and complains only once another warning is printed.
AC_DEFUN([CORDON_ADD_CFLAG],
[AS_VAR_PUSHDEF([cordon_cache], [cordon_cv_cflag_]m4_default([$3], [$2]))dnl
AC_CACHE_CHECK([whether $CC accepts ]m4_default([$3], [$2]), [cordon_cache],
  [cordon_save_CFLAGS=$CFLAGS
   CFLAGS="$CFLAGS -Werror m4_default([$3], [$2])"
   AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
     [AS_VAR_SET([cordon_cache], [yes])], [AS_VAR_SET([cordon_cache], [no])])
   CFLAGS=$cordon_save_CFLAGS])
AS_VAR_IF([cordon_cache], [yes], [AS_VAR_APPEND([$1], [" $2"])])
AS_VAR_POPDEF([cordon_cache])])

# CORDON_ADD_LDFLAG(VARIABLE, FLAG, [EXTRA-CFLAGS])
# -----------------------------------------------
# Append FLAG to VARIABLE if $CC links a program with it (and EXTRA-CFLAGS
# on the compile side) under -Werror.
AC_DEFUN([CORDON_ADD_LDFLAG],
[AS_VAR_PUSHDEF([cordon_cache], [cordon_cv_ldflag_$2])dnl
AC_CACHE_CHECK([whether $CC links with $2], [cordon_cache],
  [cordon_save_CFLAGS=$CFLAGS; cordon_save_LDFLAGS=$LDFLAGS
   CFLAGS="$CFLAGS -Werror $3"; LDFLAGS="$LDFLAGS $2"
   AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
     [AS_VAR_SET([cordon_cache], [yes])], [AS_VAR_SET([cordon_cache], [no])])
   CFLAGS=$cordon_save_CFLAGS; LDFLAGS=$cordon_save_LDFLAGS])
AS_VAR_IF([cordon_cache], [yes], [AS_VAR_APPEND([$1], [" $2"])])
AS_VAR_POPDEF([cordon_cache])])
