"""Pure statistics: Bradley-Terry Elo with bootstrap intervals (:mod:`.ratings`) and the
sequential probability ratio test of ``arena match`` (:mod:`.sprt`)."""
