#!/bin/sh
# edu-events COUNT GAP_US: raises COUNT interrupts of qemu's "edu" PCI device, GAP_US apart, by
# writing 1 to its interrupt-raise register (BAR0 + 0x60) through /dev/mem. The reader
# acknowledges each (BAR0 + 0x64) itself: rtgauge's `event:uio=...,ack=0:0x64=1`. Binds the
# device to uio_pci_generic first if it is not bound yet. Prints the number raised.
count=$1 gap=$2
dev=
for d in /sys/bus/pci/devices/*; do
  [ "$(cat $d/vendor)" = 0x1234 ] && [ "$(cat $d/device)" = 0x11e8 ] && dev=$d && break
done
[ -n "$dev" ] || { echo "edu-events: no edu device (qemu -device edu)" >&2; exit 1; }
bar=$(head -1 $dev/resource | cut -d' ' -f1)
i=0
while [ $i -lt $count ]; do
  devmem $((bar + 0x60)) 32 1 || exit 1
  i=$((i + 1))
  usleep $gap
done
echo $i
