#!/bin/sh
# What .editorconfig promises, checked over the tree's C sources, docs and
# scripts (make check runs it; so can anyone, from anywhere):
#   - no tab, except in Makefiles and Go (their tools want tabs);
#   - no trailing whitespace (nor a carriage return);
#   - a final newline;
#   - no line over 120 columns in .c, .h and .cpp.
# Each problem is printed as FILE:LINE: RULE, then a summary; exits 1 on
# any problem not waived. scripts/style-waivers holds waivers by file,
# rule and count, for lines that wait for their file to settle; a waived
# problem is still printed, marked (waived).
#
#   scripts/check-style.sh [TOP]
#
# TOP is the source tree (default: this script's parent). The files are
# git's when TOP is a git work tree, else those found under it (a release
# tarball), build trees and generated files aside.
set -u
top=${1:-$(dirname "$0")/..}
cd "$top" || exit 2

list() {
  # git's list only when TOP is the work tree's top (a tarball unpacked
  # inside a checkout, as distcheck does, is not the checkout's)
  if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
    git ls-files
  else
    find . \( -name .git -o -name '_build*' -o -name '_inst*' -o -name autom4te.cache \
              -o -name build-aux -o -name .deps -o -name .libs \) -prune -o -type f -print | sed 's|^\./||'
  fi
}

# The files the rules cover: C sources, docs, scripts and build files.
list | while IFS= read -r f; do
  case $f in
    bench/results/*|tests/fuzz/corpus/*) ;;
    *.c|*.h|*.cpp|*.md|*.sh|*.py|*.js|*.go) echo "$f" ;;
    docs/man/*|scripts/*|.ci/*|debian/rules|debian/tests/*) echo "$f" ;;
    Makefile.am|configure.ac|m4/cordon-*.m4|*.pc.in|*.py.in|*.sym|.editorconfig|.clang-format) echo "$f" ;;
  esac
done | LC_ALL=C sort >"${TMPDIR:-/tmp}/check-style.$$"
trap 'rm -f "${TMPDIR:-/tmp}/check-style.$$"' EXIT

waivers=scripts/style-waivers
[ -f "$waivers" ] || waivers=/dev/null
LC_ALL=C perl -e '
  my ($waivers, $listing) = @ARGV;
  my (%left, $problems, $waived, $files);
  open(my $w, "<", $waivers) or die "$waivers: $!\n";
  while (<$w>) {
    next if /^\s*(#|$)/;
    my ($file, $rule, $count) = split;
    $left{"$file $rule"} += $count;
  }
  open(my $l, "<", $listing) or die "$listing: $!\n";
  chomp(my @files = <$l>);
  sub report {
    my ($file, $line, $rule, $what) = @_;
    if ($left{"$file $rule"}) {
      $left{"$file $rule"}--;
      $waived++;
      print "$file:$line: $rule: $what (waived)\n";
    } else {
      $problems++;
      print "$file:$line: $rule: $what\n";
    }
  }
  for my $file (@files) {
    my $tabs_ok = $file =~ m{(^|/)(Makefile(\.am|\.in)?|[^/]*\.mk|rules)$|\.go$};
    my $c = $file =~ /\.(c|h|cpp)$/;
    open(my $fh, "<", $file) or do { report($file, 0, "unreadable", "$!"); next };
    $files++;
    my ($n, $last) = (0, "");
    while (my $line = <$fh>) {
      $n++;
      $last = $line;
      my $text = $line;
      $text =~ s/\n\z//;
      report($file, $n, "tab", "a tab (indent with spaces)") if !$tabs_ok && $text =~ /\t/;
      report($file, $n, "trailing-whitespace", "whitespace at the end of the line")
        if $text =~ /[ \t\r]\z/;
      if ($c) {
        (my $cols = $text) =~ s/[\x80-\xbf]//g;    # one column per UTF-8 character
        report($file, $n, "long-line", length($cols) . " columns, over 120") if length($cols) > 120;
      }
    }
    report($file, $n, "no-final-newline", "the last line does not end in a newline")
      if $n > 0 && $last !~ /\n\z/;
  }
  for my $k (sort keys %left) {
    print "check-style: scripts/style-waivers: $k waives $left{$k} more than there are (lower it)\n"
      if $left{$k} > 0;
  }
  printf "check-style: %d files, %d problems, %d waived\n", $files // 0, $problems // 0, $waived // 0;
  # a check that found nothing to check has checked nothing
  exit(($problems // 0) > 0 || !$files ? 1 : 0);
' "$waivers" "${TMPDIR:-/tmp}/check-style.$$"
