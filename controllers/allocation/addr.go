package allocation

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
)

// uint128 is an IP address as a number, for the first-fit search: IPv4
// addresses in the low 32 bits.
type uint128 struct{ hi, lo uint64 }

func toUint128(a netip.Addr) uint128 {
	if a.Is4() {
		b := a.As4()
		return uint128{lo: uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := a.As16()
	return uint128{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}
}

// addr is the address of v in a family of the given bit length.
func (v uint128) addr(bitLen int) netip.Addr {
	if bitLen == 32 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(v.lo))
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], v.hi)
	binary.BigEndian.PutUint64(b[8:], v.lo)
	return netip.AddrFrom16(b)
}

// lastAddr is the highest address of a masked prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	v := toUint128(p.Addr())
	return v.or(uint128{}.addOne().shl(uint(p.Addr().BitLen() - p.Bits())).sub1()).addr(p.Addr().BitLen())
}

func (v uint128) less(o uint128) bool { return v.hi < o.hi || (v.hi == o.hi && v.lo < o.lo) }

func (v uint128) or(o uint128) uint128 { return uint128{v.hi | o.hi, v.lo | o.lo} }

func (v uint128) add(o uint128) uint128 {
	lo, carry := bits.Add64(v.lo, o.lo, 0)
	hi, _ := bits.Add64(v.hi, o.hi, carry)
	return uint128{hi, lo}
}

func (v uint128) addOne() uint128 { return v.add(uint128{lo: 1}) }

func (v uint128) sub1() uint128 {
	lo, borrow := bits.Sub64(v.lo, 1, 0)
	hi, _ := bits.Sub64(v.hi, 0, borrow)
	return uint128{hi, lo}
}

// shl shifts left by n < 128; 1.shl(128) is 0, which sub1 turns into all
// ones: the host mask of a /0.
func (v uint128) shl(n uint) uint128 {
	switch {
	case n >= 128:
		return uint128{}
	case n >= 64:
		return uint128{hi: v.lo << (n - 64)}
	case n == 0:
		return v
	}
	return uint128{hi: v.hi<<n | v.lo>>(64-n), lo: v.lo << n}
}

// alignUp rounds v up to a multiple of 2^n; false if that overflows.
func (v uint128) alignUp(n uint) (uint128, bool) {
	mask := uint128{}.addOne().shl(n).sub1()
	if v.hi&mask.hi == 0 && v.lo&mask.lo == 0 {
		return v, true
	}
	up := v.or(mask)
	if up == (uint128{^uint64(0), ^uint64(0)}) {
		return uint128{}, false
	}
	return up.addOne(), true
}
