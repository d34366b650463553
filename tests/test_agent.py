"""agent.talent_strategies: talents map to their exemplars' majority gold strategy."""

from __future__ import annotations

from types import SimpleNamespace

from talentrl_cli.agent import talent_strategies
from talentrl_cli.schema import Talent, Task


class _Env:
    """dev only, as a suite without train and test splits; ids renumbered since the mine."""

    def tasks(self, split: str) -> list[Task]:
        if split != "dev":
            raise KeyError(split)
        return [Task(id="t-0", question="Is A in B?", strategy="yes_no"),
                Task(id="t-1", question="Where was C born?", strategy="single_hop"),
                Task(id="t-2", question="Where was D born?", strategy="single_hop")]


def test_exemplars_match_by_question_so_renumbered_ids_do_not_mislead():
    renumbered = Talent(name="read", description="", exemplars=["Where was C born?", "Where was D born?"],
                        meta={"exemplar_ids": ["t-0", "t-0"]})  # by id: yes_no, which is wrong
    ids_only = Talent(name="verify", description="", meta={"exemplar_ids": ["t-0", "t-9"]})
    unknown = Talent(name="other", description="", exemplars=["Not a task?"], meta={"exemplar_ids": ["t-1"]})
    bank = SimpleNamespace(talents=[renumbered, ids_only, unknown])
    assert talent_strategies(bank, _Env()) == {"read": "single_hop", "verify": "yes_no"}
