"""How a verdict is kept and read: the record's columns and files (:mod:`.records`), the committed
runs' records (:mod:`.committed`), the flags' registry and trust policies (:mod:`.flags`), the
metrics computed over records (:mod:`.metrics`) and the measuring protocols a record is read under
(:mod:`.protocols`).
"""
