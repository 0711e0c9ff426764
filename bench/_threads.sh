#!/bin/bash
pid=$1; secs=$2
snap() { for t in /proc/$pid/task/*; do s=$(cut -d')' -f2 $t/stat | awk '{print $12+$13}'); echo "$(basename $t) $s"; done | sort; }
snap > /tmp/th0; sleep $secs; snap > /tmp/th1
join /tmp/th0 /tmp/th1 | awk -v pid=$pid '{d=$3-$2; if (d>0) printf "%s%s %.2f s\n", $1, ($1==pid?" (main)":""), d/100}' | sort -k2 -nr
