#!/usr/bin/python3
"""Writes the built-in class lists under assets/classes/, one class name a line.

ImageNet-1k and COCO come from torchvision's metadata (Debian python3-torchvision,
torchvision.models._meta); CIFAR-10 and the digits are short enough to state here.

    /usr/bin/python3 tools/make-class-lists.py [OUT_DIR]
"""
import pathlib
import sys

from torchvision.models import _meta

CIFAR10 = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
DIGITS = [str(d) for d in range(10)]


def main() -> None:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "assets" / "classes")
    out.mkdir(parents=True, exist_ok=True)
    coco91 = list(_meta._COCO_CATEGORIES)  # index = category id; "__background__" and "N/A" gaps
    lists = {
        "imagenet.txt": list(_meta._IMAGENET_CATEGORIES),
        "coco91.txt": coco91,
        "coco80.txt": [c for c in coco91 if c not in ("__background__", "N/A")],
        "cifar10.txt": CIFAR10,
        "digits.txt": DIGITS,
    }
    assert len(lists["imagenet.txt"]) == 1000 and len(lists["coco80.txt"]) == 80
    for name, names in lists.items():
        (out / name).write_text("".join(n + "\n" for n in names))
        print(f"{out / name}: {len(names)} classes")


if __name__ == "__main__":
    main()
