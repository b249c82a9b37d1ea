"""Generic sections: each kind is a parameter schema (:mod:`.specs`), a builder over the code
model (:mod:`.code`, :mod:`.data`, :mod:`.curated`) and a template (``templates/sections/``)."""
