//go:build !unix

package sandbox

// SealInheritedDescriptors does nothing here.
func SealInheritedDescriptors() {}
