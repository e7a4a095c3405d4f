#!/bin/sh
# The KCachegrind pictures of docs/manual.md: examples/lookups.cpp (-O2)
# under kgrind at k=2 in physical frames (--inline-frames=no), and at k=3
# with --inline-frames=yes (the inlined levels' picture), opened by
# KCachegrind in a virtual X server and driven by xdotool ("Shorten
# Templates" on, the flat profile filtered);
# and Debian's bzip2 with the cache and branch simulations (the events).
#   docs/img/make_kcachegrind_pictures.sh   (from the source tree, after ./setup.sh --build;
#                                            needs kcachegrind xvfb xdotool imagemagick)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
g++ -g -O2 "$top/examples/lookups.cpp" -o "$work/lookups"
(cd "$work" && "$top/build/kgrind/vg-in-place" --tool=kgrind -q --inline-frames=no \
    --kgrind-out-file=lookups.kg ./lookups >/dev/null)
(cd "$work" && "$top/build/kgrind/vg-in-place" --tool=kgrind -q --k=3 --inline-frames=yes \
    --kgrind-out-file=inline.kg ./lookups >/dev/null)
cat > "$work/start.sh" <<'START'
# Sourced by the drives: KCachegrind on profile $1 in a fresh configuration
# (its pid in $pid), given time to start.
export XDG_CONFIG_HOME="$(dirname "$1")/config"
rm -rf "$XDG_CONFIG_HOME"; mkdir -p "$XDG_CONFIG_HOME"
printf '[TipOfDay]\nRunOnStart=false\n' > "$XDG_CONFIG_HOME/kcachegrindrc"
kcachegrind -qwindowgeometry 1400x800+0+0 "$1" >/dev/null 2>&1 &
pid=$!
sleep 8
START
cat > "$work/drive.sh" <<'DRIVE'
#!/bin/sh
# $1 profile, $2 picture, $3 the flat profile's width, $4 search, $5 the lower pane's tab (x)
. "$(dirname "$0")/start.sh"
drag() { xdotool mousemove "$1" "$2"; sleep 0.3; xdotool mousedown 1; sleep 0.3
         xdotool mousemove $(( ($1 + $3) / 2 )) "$2"; sleep 0.2; xdotool mousemove "$3" "$2"; sleep 0.2; xdotool mouseup 1; sleep 1; }
xdotool mousemove 651 38 click 1; sleep 1            # Shorten Templates
drag 336 300 "$3"                                    # the flat profile's width
xdotool mousemove 128 89 click 1; xdotool type --delay 50 "$4"; xdotool key Return; sleep 1
[ "$3" -gt 600 ] && drag 353 119 $(( $3 - 20 ))      # its Function column
xdotool mousemove 200 "$6" click 1; sleep 1          # a context selected
[ "$5" -gt 0 ] && xdotool mousemove "$5" 756 click 1 # Call Graph
sleep 3
import -window root "$2"
kill $pid
DRIVE
chmod +x "$work/drive.sh"
xvfb-run -a -s "-screen 0 1400x800x24" dbus-run-session "$work/drive.sh" "$work/lookups.kg" "$work/flat.png" 760 Scope::lookup 0 157
xvfb-run -a -s "-screen 0 1400x800x24" dbus-run-session "$work/drive.sh" "$work/lookups.kg" "$work/callers.png" 360 memcmp 521 138
xvfb-run -a -s "-screen 0 1400x800x24" dbus-run-session "$work/drive.sh" "$work/inline.kg" "$work/inline.png" 560 _M_lower_bound 745 138
convert "$work/flat.png" -crop 760x300+0+0 -colors 64 PNG8:"$top/docs/img/kcachegrind-flat.png"
convert "$work/callers.png" -colors 64 PNG8:"$top/docs/img/kcachegrind-callers.png"
convert "$work/inline.png" -colors 64 PNG8:"$top/docs/img/kcachegrind-inline.png"

# Events: Debian's bzip2 compressing the docs, --cache-sim=yes --branch-sim=yes
# at k=2: the event selector opened, and the flat profile and a context's
# callers and callees by Cycle Estimation (inclusive: __root__ at 100 %).
cat "$top"/docs/*.md "$top"/docs/design/*.md > "$work/text"
(cd "$work" && "$top/build/kgrind/vg-in-place" --tool=kgrind -q --cache-sim=yes --branch-sim=yes \
    --I1=32768,8,64 --D1=49152,12,64 --LL=8388608,16,64 --kgrind-out-file=bz.kg /usr/bin/bzip2 -c text >/dev/null)
cat > "$work/events.sh" <<'DRIVE'
#!/bin/sh
# $1 profile, $2 picture, $3 the row of the context to select (0: the event selector left open)
. "$(dirname "$0")/start.sh"
xdotool mousemove 878 38 click 1; sleep 1                  # the event selector
if [ "$3" -gt 0 ]; then
   xdotool mousemove 790 439 click 1; sleep 1              # Cycle Estimation
   xdotool mousemove 336 300; sleep 0.3; xdotool mousedown 1; sleep 0.3
   xdotool mousemove 500 300; sleep 0.2; xdotool mousemove 690 300; sleep 0.2; xdotool mouseup 1; sleep 1
   xdotool mousemove 200 $(( 138 + 19 * $3 )) click 1; sleep 1
   xdotool mousemove 790 756 click 1                       # Callees below
fi
sleep 3
import -window root "$2"
kill $pid
DRIVE
chmod +x "$work/events.sh"
xvfb-run -a -s "-screen 0 1400x800x24" dbus-run-session "$work/events.sh" "$work/bz.kg" "$work/events.png" 0
xvfb-run -a -s "-screen 0 1400x800x24" dbus-run-session "$work/events.sh" "$work/bz.kg" "$work/cest.png" 10
convert "$work/events.png" -crop 1030x460+0+0 -colors 64 PNG8:"$top/docs/img/kcachegrind-events.png"
convert "$work/cest.png" -colors 64 PNG8:"$top/docs/img/kcachegrind-cycle-estimate.png"
rm -rf "$work"
