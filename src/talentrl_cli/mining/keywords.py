"""Distinctive task words for a group of trajectories (used to describe skills and talents)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from talentrl_cli.mining.templates import STOPWORDS

_CAPITALISED = re.compile(r"(?<=[\w,;:)\]\"'] )[A-Z][^\W\d_]+")
MIN_SHARE = 0.1  # a group word must occur in this share of its tasks


def name_words(texts: Sequence[str]) -> set[str]:
    """Lower-cased words that some text capitalises past its first word: parts of names
    (an entity is never a kind of task, and may be another task's answer)."""
    return {word.lower() for text in texts for word in _CAPITALISED.findall(text)}


class Keywords:
    """Binary bag of words over task texts; a group's distinctive words are those whose
    document frequency inside the group most exceeds their frequency overall."""

    def __init__(self, texts: Sequence[str]):
        from sklearn.feature_extraction.text import CountVectorizer

        stop = STOPWORDS | name_words(texts)
        self.vectorizer = CountVectorizer(binary=True, lowercase=True, stop_words=sorted(stop),
                                          token_pattern=r"(?u)\b[^\W\d_]{3,}\b")
        try:
            self.matrix = self.vectorizer.fit_transform(texts).tocsr()
            self.vocab = np.array(self.vectorizer.get_feature_names_out())
        except ValueError:  # no word at all
            self.matrix, self.vocab = None, np.array([])
        self.overall = None if self.matrix is None else np.asarray(self.matrix.mean(axis=0)).ravel()

    def distinctive(self, rows: Sequence[int], top: int = 3) -> list[str]:
        """The words whose in-group frequency most exceeds the overall one, among words in at
        least `MIN_SHARE` of the group's tasks: wording shared by a kind of task, not one
        task's entity (which could be another task's gold answer)."""
        if self.matrix is None or len(rows) == 0:
            return []
        inside = np.asarray(self.matrix[np.asarray(rows)].mean(axis=0)).ravel()
        lift = inside - self.overall
        order = np.lexsort((self.vocab, -lift))  # by lift, then alphabetically
        kept = [i for i in order if lift[i] > 0 and inside[i] >= MIN_SHARE]
        return [str(self.vocab[i]) for i in kept[:top]]
