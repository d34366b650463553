"""TalentRL training (DESIGN §2): `interventions` (which talents a group runs), `advantages`
(the credit estimators, pure functions in registries), `loss` (clipped surrogate + k3 KL),
`trainer` (one step on accelerate), `checkpoint` (resume) and `report`. The stage is
`stages/rl.py`."""
