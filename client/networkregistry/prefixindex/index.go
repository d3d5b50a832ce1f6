// Package prefixindex finds, among many IP prefixes, the ones that overlap a
// prefix (for an address, the prefix of its full length: those that contain
// it), in time that grows with the prefix length rather than with the number
// of prefixes: it is a prefix trie
// (github.com/gaissmai/bart) whose entries name their holders.
//
// The allocation controller keeps its ledger in it, and the networkregistry
// library answers WhoHas and Overlaps from it.
package prefixindex

import (
	"iter"
	"net/netip"
	"slices"

	"github.com/gaissmai/bart"
)

// Index maps prefixes to their holders; a prefix may have several holders
// (e.g. claims waiting for the same range). The zero value is empty and
// ready to use. An Index is not safe for concurrent use.
type Index[H comparable] struct {
	trie    bart.Table[[]H]
	entries int
}

// Insert records that h holds p (masked to its network address); inserting
// the same pair again changes nothing.
func (x *Index[H]) Insert(p netip.Prefix, h H) {
	p = p.Masked()
	holders, _ := x.trie.Get(p)
	if slices.Contains(holders, h) {
		return
	}
	// A fresh slice: the trie keeps values by copy, and callers may hold
	// the old one from an iteration.
	x.trie.Insert(p, append(slices.Clip(holders), h))
	x.entries++
}

// Delete removes the pair and reports whether it was there.
func (x *Index[H]) Delete(p netip.Prefix, h H) bool {
	p = p.Masked()
	holders, _ := x.trie.Get(p)
	i := slices.Index(holders, h)
	if i < 0 {
		return false
	}
	x.entries--
	if len(holders) == 1 {
		x.trie.Delete(p)
		return true
	}
	x.trie.Insert(p, slices.Delete(slices.Clone(holders), i, i+1))
	return true
}

// Holders returns who holds exactly p.
func (x *Index[H]) Holders(p netip.Prefix) []H {
	holders, _ := x.trie.Get(p.Masked())
	return slices.Clone(holders)
}

// Overlapping yields every (prefix, holder) whose prefix shares an address
// with p: first the prefixes that contain p, least specific first (p itself
// among them), then those inside p, in CIDR order. Holders of one prefix come
// in the order they were inserted. The order is deterministic, so messages
// naming "the" holder are too.
func (x *Index[H]) Overlapping(p netip.Prefix) iter.Seq2[netip.Prefix, H] {
	return func(yield func(netip.Prefix, H) bool) {
		if !p.IsValid() {
			return
		}
		p = p.Masked()
		type entry struct {
			prefix  netip.Prefix
			holders []H
		}
		// Supernets come most specific first; collect them to reverse.
		var supernets []entry
		for q, holders := range x.trie.Supernets(p) {
			supernets = append(supernets, entry{q, holders})
		}
		for _, e := range slices.Backward(supernets) {
			for _, h := range e.holders {
				if !yield(e.prefix, h) {
					return
				}
			}
		}
		for q, holders := range x.trie.Subnets(p) {
			if q == p { // already yielded as a supernet
				continue
			}
			for _, h := range holders {
				if !yield(q, h) {
					return
				}
			}
		}
	}
}

// All yields every (prefix, holder), IPv4 before IPv6, in CIDR order.
func (x *Index[H]) All() iter.Seq2[netip.Prefix, H] {
	return func(yield func(netip.Prefix, H) bool) {
		for p, holders := range x.trie.AllSorted() {
			for _, h := range holders {
				if !yield(p, h) {
					return
				}
			}
		}
	}
}

// Len is the number of (prefix, holder) pairs.
func (x *Index[H]) Len() int { return x.entries }
