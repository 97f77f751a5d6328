"""``bench preferences``: blind pairs of trial outputs, checked votes, Bradley-Terry ratings.

``outputs.py`` finds what raters compare (trial folders, ``--items`` rows) and
copies it under opaque ids; ``pairing.py`` makes the blind pairs; ``make.py``
writes the store (:mod:`benchflow.collector`) and the pairs file;
``votes_file.py`` reads and checks a votes file for ``import``;
``bradley_terry.py`` fits ratings, ``agreement.py`` checks raters and
``rank.py`` puts them together into ``ratings.v1.json``. Votes are never
rewards: no trial file is read for a reward or changed.
"""
