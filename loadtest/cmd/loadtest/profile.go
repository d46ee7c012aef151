package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// profile writes this process's CPU profile over the whole play to dir/cpu-NAME.pprof and, when stop is called,
// a heap profile to dir/heap-NAME.pprof. With -profile every generator process (the parent as "main", each child
// as "child-N") writes its own pair: when a crowd is too slow, whether the generator or the platform is the
// bottleneck is the first thing to know, and the generator's processes are not reachable by the services' pprof.
func profile(dir, name string) (stop func() error, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu-"+name+".pprof"))
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		return nil, fmt.Errorf("profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		errs := []error{cpu.Close()}
		heap, err := os.Create(filepath.Join(dir, "heap-"+name+".pprof"))
		if err == nil {
			runtime.GC() // the heap profile shows what was live at the last collection: make that now
			errs = append(errs, pprof.WriteHeapProfile(heap), heap.Close())
		}
		errs = append(errs, err)
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("profile: %w", err)
		}
		return nil
	}, nil
}
