//go:build !linux

package job

func holdHome(Job) func() { return func() {} }
