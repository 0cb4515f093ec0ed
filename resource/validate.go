package resource

import "fmt"

const maxRunID = 200

func checkRunID(runID string) error {
	switch {
	case runID == "":
		return badInput("run_id is missing: name the run, which is the lock's name (job-1 for lock:{job-1})")
	case len(runID) > maxRunID:
		return badInput(fmt.Sprintf("run_id is %d bytes long; keep it under %d", len(runID), maxRunID))
	}
	return nil
}

// validate refuses what the database should never see; nothing is changed or
// logged for bad input.
func (s *Store) validate(op string, h Holder) error {
	if err := checkRunID(h.RunID); err != nil {
		return err
	}
	if h.Client < 0 || h.Process < 0 {
		return badInput(fmt.Sprintf("client %d / process %d: both must be 0 or more", h.Client, h.Process))
	}
	if h.Fence < 0 {
		return badInput(fmt.Sprintf("fence %d is negative: present the number INCR fence:{%s} returned", h.Fence, h.RunID))
	}
	if !s.mode.fenced(op) {
		return nil
	}
	if h.Fence == 0 {
		return badInput(fmt.Sprintf("fence is missing: mode %s checks the fence on every %s; present the number INCR fence:{%s} returned with the lock", s.mode, op, h.RunID))
	}
	if h.Token == "" {
		return badInput(fmt.Sprintf("token is missing: mode %s needs the lock token with the fence to tell the same holder from another holder with the same number", s.mode))
	}
	return nil
}
