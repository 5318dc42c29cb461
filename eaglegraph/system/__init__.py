"""The machine: GPUs through NVML, software versions, and live stacks through py-spy.

Everything here degrades instead of failing: no driver, no NVML, no CUDA or no torch give
"N/A" values with a note; py-spy problems become one-line errors that say what to do.
"""
