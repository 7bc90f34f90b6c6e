"""Field splitting that keeps the rest of the line intact."""


def split_fields(line, sep=",", maxsplit=-1):
    """Split `line` on `sep`, stripping each field; at most `maxsplit` splits (-1: all).

    The remainder after the last split is one field, as str.split does.
    """
    if sep == "":
        raise ValueError("empty separator")
    fields = []
    rest = line
    while maxsplit < 0 or len(fields) < maxsplit - 1:
        i = rest.find(sep)
        if i < 0:
            break
        fields.append(rest[:i].strip())
        rest = rest[i + len(sep):]
    fields.append(rest.strip())
    return fields


def rsplit_fields(line, sep=",", maxsplit=-1):
    """As split_fields, from the right."""
    if sep == "":
        raise ValueError("empty separator")
    return [f.strip() for f in line.rsplit(sep, maxsplit)]
