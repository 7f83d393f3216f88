"""The upload form. Its format choices come from the importers' registry, so a new
format appears by itself."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from contextsim.ingest.detect import IMPORTERS


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    widget = MultipleFileInput

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile[bytes]]:
        single = super().clean
        items = data if isinstance(data, list | tuple) else [data]
        return [single(item, initial) for item in items if item] or [single(None, initial)]


def format_choices() -> list[tuple[str, str]]:
    return [("", "Detect automatically")] + [(k, i.label) for k, i in IMPORTERS.items()]


class UploadForm(forms.Form):
    # Named as the page posts it: Django's form metaclass moves a declared field into
    # base_fields, so it does not stand for BaseForm.files (the uploads).
    files = MultipleFileField(label="Log files")  # type: ignore[assignment]
    format = forms.ChoiceField(choices=format_choices, required=False, label="Format")

    def clean_files(self) -> list[UploadedFile[bytes]]:
        files: list[UploadedFile[bytes]] = self.cleaned_data["files"]
        for f in files:
            if f.size is not None and f.size > settings.MAX_UPLOAD_BYTES:
                raise forms.ValidationError(
                    f"{f.name} is {f.size:,} bytes; the limit is {settings.MAX_UPLOAD_BYTES:,}"
                )
        return files
