"""talentrl: strategy-guided RL for hierarchical skill routing (TalentRL), as a CLI toolkit.

Heavy libraries (torch, transformers, TRL) are imported inside the stages only, so that
`talentrl --help` and the light commands stay fast.
"""

__version__ = "0.1.0"
