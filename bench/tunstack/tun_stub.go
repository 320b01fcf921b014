//go:build nonetstack

package main

// Built without gVisor: only to compare the binary's size and start with
// the netstack linked in and without.

type tunRelay struct{}

var tunSACK bool

func (*tunRelay) Close() {}

func setupTUN(nsfd int, mtu uint32) (*tunRelay, error) { return nil, errNoNetstack }

func tunInside(mtu uint32) (int, error) { return -1, errNoNetstack }

func tunServe(fd int, mtu uint32) (*tunRelay, error) { return nil, errNoNetstack }
