"""The foundation every layer uses: where kbench keeps its caches and where its package is
(:mod:`.paths`), where a number came from (:mod:`.provenance`), the one lock over torch's random
generators (:mod:`.seeding`), tracebacks that start at the candidate's own frames
(:mod:`.tracebacks`), the CPU cores kept to each GPU (:mod:`.cpu_sets`), the notebooks' parameters
(:mod:`.params`), who may hold torch's build lock in a build folder (:mod:`.build_claim`) and
candidate files (:mod:`.candidates`). These modules import nothing else of the package.
"""
